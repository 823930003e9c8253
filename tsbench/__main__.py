"""`python -m tsbench`: the command line (see tsbench.cli)."""

from tsbench.cli import main

if __name__ == "__main__":
    main()
