#!/usr/bin/env python3
"""Entry point: `python run_eval.py --model gpt-4 --shots 4 --instr long` (see README)."""

import sys

from harness.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
