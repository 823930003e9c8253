"""The devops use case (phase 1): 9 measurements, 101 fields per host per epoch,
exactly the model of ../shared/spec/DATAMODEL.md, in tsbench's native choices
(cpu fields are floats; disk and mem written as TSBS writes them). `--param
cpu_fields=integer` writes the cpu fields as TSBS does, as integers (the walk's
value truncated, as TSBS's ToPointAllInt64), for TSBS's exact shape; the default
(float) writes the bytes it always did.

Known quirk, kept on purpose: walks with a positive-mean step reach their
upper clamp and stay there (postgresl after ~200 ticks, nginx gauges after ~20),
which flatters compression. cpu is the only mean-zero walk.
"""

from __future__ import annotations

from functools import cache

from tsbench.data.schema import (
    Schema,
    Series,
    choice_by_tag,
    choice_tag,
    const,
    constant,
    cwd,
    init_choice,
    init_uniform,
    lin,
    mwd,
    normal,
    ratio,
    tag,
    wd,
)
from tsbench.data.usecases.base import UseCase

GIB = 1 << 30
TIB = 1 << 40

REGIONS = {
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    "us-west-1": ["us-west-1a", "us-west-1b"],
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "eu-west-1": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "eu-central-1": ["eu-central-1a", "eu-central-1b"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
    "ap-northeast-1": ["ap-northeast-1a", "ap-northeast-1c"],
    "sa-east-1": ["sa-east-1a", "sa-east-1b", "sa-east-1c"],
}

HOST_TAGS = (
    tag("hostname", "host_{entity}"),
    choice_tag("region", list(REGIONS)),
    choice_by_tag("datacenter", "region", REGIONS),
    tag("rack", "{int:0..99}"),
    choice_tag("os", ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]),
    choice_tag("arch", ["x64", "x86"]),
    choice_tag("team", ["SF", "NYC", "LON", "CHI"]),
    tag("service", "{int:0..19}"),
    tag("service_version", "{int:0..1}"),
    choice_tag("service_environment", ["production", "staging", "test"]),
)

CPU_FIELDS = ("usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq",
              "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice")


def cpu(fields=CPU_FIELDS, kind: str = "float") -> Series:
    return Series("cpu", tuple(cwd(f, normal(0, 1), 0, 100, init_uniform(0, 100), type=kind) for f in fields))


def diskio() -> Series:
    return Series("diskio", (
        mwd("reads", normal(50, 1)), mwd("writes", normal(50, 1)),
        mwd("read_bytes", normal(100, 1)), mwd("write_bytes", normal(100, 1)),
        mwd("read_time", normal(5, 1)), mwd("write_time", normal(5, 1)), mwd("io_time", normal(5, 1)),
    ), tags=(tag("serial", "{int:0..999:3}-{int:0..999:3}-{int:0..999:3}"),))


def disk() -> Series:
    return Series("disk", (
        const("total", TIB),
        cwd("free", normal(50, 1), 0, TIB, TIB // 2),
        lin("used", 0, [(1, "total"), (-1, "free")]),
        ratio("used_percent", "used", "total", 100, type="int"),
        lin("inodes_total", 0, [(1 / 4096, "total")]),
        lin("inodes_free", 0, [(1 / 4096, "free")]),
        lin("inodes_used", 0, [(1, "inodes_total"), (-1, "inodes_free")]),
    ), tags=(tag("path", "/dev/sda{int:0..9}"), choice_tag("fstype", ["ext3", "ext4", "btrfs"])))


def kernel() -> Series:
    return Series("kernel", (
        const("boot_time", init_uniform(0, 240)),
        mwd("interrupts", normal(5, 1)), mwd("context_switches", normal(5, 1)),
        mwd("processes_forked", normal(5, 1)), mwd("disk_pages_in", normal(5, 1)),
        mwd("disk_pages_out", normal(5, 1)),
    ))


def mem() -> Series:
    def walk(name):
        return cwd(name, normal(0, 1 / 64), 0, 1, init_uniform(0, 1), scale_by="total")

    return Series("mem", (
        const("total", init_choice([8 * GIB, 12 * GIB, 16 * GIB])),
        lin("available", 0, [(1, "total"), (-1, "used")]),
        walk("used"),
        lin("free", 0, [(1, "available")]),
        walk("cached"),
        walk("buffered"),
        ratio("used_percent", "used", "total", 100),
        ratio("available_percent", "available", "total", 100),
        ratio("buffered_percent", "buffered", "total", 100),
    ))


def net() -> Series:
    return Series("net", (
        mwd("bytes_sent", normal(50, 1)), mwd("bytes_recv", normal(50, 1)),
        mwd("packets_sent", normal(50, 1)), mwd("packets_recv", normal(50, 1)),
        mwd("err_in", normal(5, 1)), mwd("err_out", normal(5, 1)),
        mwd("drop_in", normal(5, 1)), mwd("drop_out", normal(5, 1)),
    ), tags=(tag("interface", "eth{int:0..3}"),))


def nginx() -> Series:
    return Series("nginx", (
        mwd("accepts", normal(5, 1)), mwd("handled", normal(5, 1)), mwd("requests", normal(5, 1)),
        cwd("active", normal(5, 1), 0, 100), cwd("reading", normal(5, 1), 0, 100),
        cwd("waiting", normal(5, 1), 0, 100), cwd("writing", normal(5, 1), 0, 100),
    ), tags=(tag("port", "{int:1024..21023}"), tag("server", "nginx_{int:0..99999}")))


POSTGRES_FIELDS = ("numbackends", "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned",
                   "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "conflicts", "temp_files",
                   "deadlocks", "blk_read_time", "blk_write_time")


def postgresl() -> Series:
    return Series("postgresl", tuple(cwd(f, normal(5, 1), 0, 1000) for f in POSTGRES_FIELDS)
                  + (cwd("temp_bytes", normal(1024, 1), 0, GIB),))


REDIS_SMALL = ("sync_full", "sync_partial_ok", "sync_partial_err", "pubsub_channels", "pubsub_patterns",
               "latest_fork_usec", "connected_slaves", "master_repl_offset", "repl_backlog_active",
               "repl_backlog_size", "repl_backlog_histlen", "used_cpu_sys", "used_cpu_user",
               "used_cpu_sys_children", "used_cpu_user_children")


def redis(interval_s: float) -> Series:
    return Series("redis", (
        mwd("uptime_in_seconds", constant(interval_s)),
        mwd("total_connections_received", normal(5, 1)),
        mwd("expired_keys", normal(50, 1)), mwd("evicted_keys", normal(50, 1)),
        mwd("keyspace_hits", normal(50, 1)), mwd("keyspace_misses", normal(50, 1)),
        *(wd(f, normal(1, 1)) for f in ("instantaneous_ops_per_sec", "instantaneous_input_kbps",
                                         "instantaneous_output_kbps")),
        cwd("connected_clients", normal(50, 1), 0, 10000), cwd("rdb_changes_since_last_save", normal(50, 1), 0, 10000),
        *(cwd(f, normal(50, 1), 0, 16 * GIB, 8 * GIB) for f in ("used_memory", "used_memory_rss",
                                                               "used_memory_peak", "used_memory_lua")),
        *(cwd(f, normal(5, 1), 0, 1000) for f in REDIS_SMALL),
        cwd("mem_fragmentation_ratio", normal(5, 1), 0, 100),
    ), tags=(tag("port", "{int:1024..21023}"), tag("server", "redis_{int:0..99999}")))


@cache
def cpu_params():
    """The --param model of the cpu use cases, built at the first --param (pydantic is not
    imported otherwise: devops starts without it)."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    class CpuParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        cpu_fields: Literal["float", "integer"] = Field(
            "float", description="the cpu fields' type: float (tsbench's, 17 digits) or integer (TSBS's)")

    return CpuParams


class CpuCase(UseCase):
    """The use cases with the cpu measurement: --param cpu_fields=float|integer."""

    @property
    def Params(self):                      # UseCase's name for the --param model
        return cpu_params()

    def _checked(self, params: dict):
        return super()._checked(params) if params else None

    @property
    def cpu_kind(self) -> str:
        return "int" if self.params is not None and self.params.cpu_fields == "integer" else "float"


class Devops(CpuCase):
    """devops: scale = hosts; 9 measurements, 101 fields per host per epoch."""

    name = "devops"

    def schema(self) -> Schema:
        interval_s = self.interval_ns / 1e9
        return Schema("devops", (cpu(kind=self.cpu_kind), diskio(), disk(), kernel(), mem(), net(), nginx(),
                                 postgresl(), redis(interval_s)), entity_tags=HOST_TAGS)


class CpuOnly(CpuCase):
    """cpu-only: the cpu measurement alone (10 fields per line)."""

    name = "cpu-only"

    def schema(self) -> Schema:
        return Schema("cpu-only", (cpu(kind=self.cpu_kind),), entity_tags=HOST_TAGS)


class CpuSingle(CpuCase):
    """cpu-single: usage_user alone."""

    name = "cpu-single"

    def schema(self) -> Schema:
        return Schema("cpu-single", (cpu(("usage_user",), self.cpu_kind),), entity_tags=HOST_TAGS)
