"""Drives an LCM engine in a child process so a test can SIGKILL it at a fault point.

Usage: python crash_driver.py DATA_DIR START TURNS DATABASE
(DATABASE: a SQLite path or a postgresql:// URL, as ``[engines.lcm] database``)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: the conftest imports tests/pg
sys.path.insert(0, str(Path(__file__).parent))

from conftest import drive, make_engine


def main() -> None:
    data_dir, start, turns, database = sys.argv[1:5]
    engine = make_engine(Path(data_dir), database=database)
    drive(engine, int(turns), start=int(start))
    engine.dispose()
    print("finished")


if __name__ == "__main__":
    main()
