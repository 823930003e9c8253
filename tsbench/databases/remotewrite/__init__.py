"""Any Prometheus remote-write receiver by URL (phase 2): loads only; no server of its own,
no count, no queries."""

TARGETS = {"remote-write": "target:RemoteWriteTarget"}
