"""The command line, `python -m tsbench COMMAND`: one module per verb that parses its
options, calls a phase and prints."""
