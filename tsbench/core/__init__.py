"""What every layer may use (all phases): errors, the shared model of tables and batches,
secrets, signals, tsbench's home folder, the C core's build id, YAML files, times, the
bounds of numeric options, output files and the bounded ends of event loops. Nothing
here imports from a phase."""
