"""The documentation site: `mkdocs build --strict` passes (no broken link, no page left out
of the build), every command has a page listing its options, every registered database a
page with its options (each with its description) and the query types it skips with the
reason, the figures page shows every recorded file; and the README stays a short front page."""

from __future__ import annotations

import html
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def _text(page: pathlib.Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def _commands() -> list[tuple[list[str], object]]:
    """Every command of the real command line, found by walking its click group."""
    import click

    sys.path.insert(0, str(ROOT / "docs"))
    from gen_pages import root_group

    listed = subprocess.run([sys.executable, "-m", "tsbench", "--help"], capture_output=True, text=True,
                            check=True).stdout.split("Commands:")[1]
    group, ctx = root_group(), click.Context(click.Group())
    assert sorted(group.list_commands(ctx)) == sorted(re.findall(r"^  (\S+)", listed, re.M))   # not wrapped lines
    out = []

    def walk(cmd, words):
        out.append((words, cmd))
        for name in cmd.list_commands(ctx) if isinstance(cmd, click.Group) else ():
            walk(cmd.get_command(ctx, name), [*words, name])
    for name in group.list_commands(ctx):
        walk(group.get_command(ctx, name), [name])
    assert out and all(isinstance(c, click.Command) for _, c in out)
    return out


def test_every_command_has_a_page_listing_its_options(site):
    for words, cmd in _commands():
        page = site / "commands" / "-".join(words) / "index.html"
        assert page.exists(), words
        text = _text(page)
        for p in cmd.params:
            assert p.opts[0] in text or p.human_readable_name in text, (words, p.name)
            if getattr(p, "help", None):
                assert " ".join(p.help.split())[:40] in " ".join(text.split()), (words, p.name)


def test_every_registered_database_has_a_page_with_options_and_skipped_types(site):
    from tsbench.databases import names, target_class
    from tsbench.databases.shared.support import support_matrix

    matrix = support_matrix()
    for name in names():
        page = site / "databases" / name / "index.html"
        assert page.exists(), name
        text = " ".join(_text(page).split())
        for field, info in target_class(name).options_model.model_fields.items():
            assert field in text, (name, field)
            assert " ".join(info.description.replace("`", "").split())[:60] in text, (name, field)
        for col in (c for c in matrix.columns if c == name or c.startswith(name + "/")):
            for qtype, why in matrix.reasons(col).items():
                assert f"{qtype} {' '.join(why.split())}" in text, (col, qtype)


def test_the_figures_page_shows_every_recorded_file(site):
    text = " ".join(_text(site / "figures" / "index.html").split())
    files = sorted((ROOT / "docs" / "figures").glob("*.json"))
    assert files
    for f in files:
        rec = json.loads(f.read_text())
        assert rec["commit"] in text and " ".join(rec["command"].split()) in text and f.name in text
        assert all(fig["name"] in text for fig in rec["figures"])


def test_readme_is_a_short_front_page():
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    assert first == ("pip install -e . && python -m tsbench run experiments/devops100.yaml\n"
                     "pip install nox && nox -s tests\n")
    assert readme.startswith("```sh\n") and len(readme.splitlines()) <= 300


def test_every_database_page_names_its_version_or_why_not(site):
    from importlib.metadata import version

    from tsbench.databases import names, server_class, target_class

    for name in names():
        cls = target_class(name)
        text = " ".join(_text(site / "databases" / name / "index.html").split())
        kinds = (cls.server_kind, *cls.other_server_kinds) if cls.server_kind else ()
        assert text.count("Version: ") == max(1, len(kinds)), name      # one a way tsbench runs it
        if not cls.keeps_data:
            assert "Version: none" in text, name
        elif not kinds and cls.engine_library is None:      # by URL only (remote-write): the user's server
            assert "Version: the user's server's" in text and "No local server" in text, name
        elif not kinds:                     # in-process: the installed engine library's version
            assert cls.engine_library and f"Version: {cls.engine_library} {version(cls.engine_library)} " in text
        for kind in kinds if cls.keeps_data else ():
            server = server_class(kind)
            fixed = server.fixed_version() if hasattr(server, "fixed_version") else None
            assert f"Version: {fixed}." in text if fixed else "Version: the installed server's" in text, kind


def test_the_settings_page_lists_every_section_of_an_experiment_file(site):
    from tsbench.experiments.experiment import SECTIONS

    text = " ".join(_text(site / "experiment-settings" / "index.html").split())
    for section, model in SECTIONS.items():
        for name, info in model.model_fields.items():
            assert name in text, (section, name)
            assert " ".join(info.description.split())[:60] in text, (section, name)
