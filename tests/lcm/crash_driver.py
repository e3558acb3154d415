"""Drives an LCM engine in a child process so a test can SIGKILL it at a fault point.

Usage: python crash_driver.py DATA_DIR START TURNS
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from conftest import drive, make_engine


def main() -> None:
    data_dir, start, turns = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    engine = make_engine(data_dir)
    drive(engine, turns, start=start)
    engine.dispose()
    print("finished")


if __name__ == "__main__":
    main()
