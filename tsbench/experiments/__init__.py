"""Experiments (all phases): the YAML model, the runner that walks an experiment's matrix of
cells, the resource monitor, and the report of a run."""
