"""The Maven/JVM layer (tsbench/databases/shared/jvm.py): resolving jars from Maven
Central into $TSBENCH_HOME/lib, the one line when Java or Maven is missing,
and the command line a JVM server gets."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from tsbench.core.errors import ServerError, UserError
from tsbench.databases.shared import jvm

pytestmark = pytest.mark.jvm

SMALL = "org.slf4j:slf4j-api:2.0.9"       # one jar, no dependencies


def test_pom_lists_each_artifact_with_its_classifier():
    text = jvm.pom(["a.b:c:1.0", "d:e:2:tests"])
    assert "<groupId>a.b</groupId><artifactId>c</artifactId><version>1.0</version></dependency>" in text
    assert "<artifactId>e</artifactId><version>2</version><classifier>tests</classifier>" in text
    with pytest.raises(ValueError):
        jvm.pom(["just-a-name"])


def test_maven_lib_resolves_once_then_serves_from_the_lib_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path))
    d = jvm.maven_lib("slf4j", "2.0.9", [SMALL], "test")
    assert d == tmp_path / "lib" / "slf4j-2.0.9"
    assert [p.name for p in d.glob("*.jar")] == ["slf4j-api-2.0.9.jar"]
    assert jvm.lib_dir("slf4j", "2.0.9") == d
    monkeypatch.setattr(jvm, "_tool", lambda *a: pytest.fail("resolved again"))
    assert jvm.maven_lib("slf4j", "2.0.9", [SMALL], "test") == d
    assert not [p for p in (tmp_path / "lib").iterdir() if p.name.startswith(".")]   # no temporary dir left


def test_an_unknown_artifact_names_the_log_and_leaves_no_lib_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path))
    with pytest.raises(ServerError) as e:
        jvm.maven_lib("nothing", "0.0.0", ["org.tsbench.nonexistent:nothing:0.0.0"], "test")
    msg = str(e.value)
    assert "resolving nothing 0.0.0 with Maven failed" in msg
    assert f"(log: {tmp_path / 'logs' / 'install-nothing-0.0.0.log'})" in msg
    assert jvm.lib_dir("nothing", "0.0.0") is None
    assert list((tmp_path / "lib").iterdir()) == []


@pytest.mark.parametrize("exe, named", [("java", "Java (`java`)"), ("mvn", "Maven (`mvn`)")])
def test_missing_java_or_maven_is_one_line_with_the_install_command(exe, named, monkeypatch, tmp_path):
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path))
    real = shutil.which
    monkeypatch.setattr(jvm.shutil, "which", lambda name: None if name == exe else real(name))
    monkeypatch.setattr(jvm.os, "geteuid", lambda: 1000)          # not root: nothing is installed
    with pytest.raises(ServerError) as e:
        jvm.maven_lib("slf4j", "2.0.9", [SMALL], "cassandra")
    assert str(e.value) == (f"cassandra: {named} is not installed "
                            f"(as root: apt-get install openjdk-17-jdk-headless maven)")


def test_an_old_java_is_refused(monkeypatch):
    monkeypatch.setattr(jvm, "java_version", lambda java: 11)
    with pytest.raises(ServerError, match="is Java 11; Java 17\\+ is needed"):
        jvm.java_home_ok("x")


class Demo(jvm.JvmServer):
    kind = "demo"
    lib_name, lib_version, artifacts = "slf4j", "2.0.9", (SMALL,)
    main_class = "org.example.Main"
    jvm_flags = ("--add-opens=java.base/java.lang=ALL-UNNAMED",)
    options_allowed = ("heap", "flavour")

    def sysprops(self, datadir, ports):
        return {"demo.port": str(ports["http"])}

    def main_args(self, datadir, ports):
        return ["--data", str(datadir)]


def test_command_line_has_heap_gc_log_flags_properties_classpath_and_main(tmp_path, monkeypatch):
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path))
    jvm.maven_lib("slf4j", "2.0.9", [SMALL], "test")
    s = Demo(instance_dir=tmp_path / "inst", options={"heap": "300m"})
    cmd = s.command(s.datadir, {"http": 1234})
    assert pathlib.Path(cmd[0]).name == "java"
    assert cmd[1:4] == ["-Xms300m", "-Xmx300m", "-XX:+ExitOnOutOfMemoryError"]     # dead, not wedged
    assert cmd[4].startswith(f"-Xlog:gc*:file={tmp_path / 'inst' / 'gc.log'}:")
    assert cmd[5:] == ["--add-opens=java.base/java.lang=ALL-UNNAMED", "-Ddemo.port=1234", "-cp",
                       f"{tmp_path / 'lib' / 'slf4j-2.0.9'}/*", "org.example.Main", "--data", str(s.datadir)]


def test_heap_defaults_to_the_machine_and_bad_options_are_one_line(tmp_path):
    assert jvm.HEAP_RE.fullmatch(Demo(instance_dir=tmp_path).heap)
    assert 256 <= int(jvm.default_heap()[:-1]) <= 1024
    with pytest.raises(UserError, match="option heap: 'lots' is not a size like 512m or 2g"):
        Demo(instance_dir=tmp_path, options={"heap": "lots"})
    with pytest.raises(UserError, match=r"unknown option 'colour' \(options: flavour, heap\)"):
        Demo(instance_dir=tmp_path, options={"colour": "red"})
