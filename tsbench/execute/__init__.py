"""Phases 4 and 5, execute and validate: the one query timer (send -> last byte, then the
target's finish()), latency figures, and the answers checked afterwards."""
