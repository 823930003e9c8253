"""`python -m tsbench`: the command line (see tsbench.commands.cli)."""

from tsbench.commands.cli import main

if __name__ == "__main__":
    main()
