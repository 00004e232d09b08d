"""HARL's published continuous-spread curves read off its README figure by pixel colour, as
numbers to set beside relayrl's (``harl_scale.py`` holds the values this prints).

    python docs/results/centralised/harl_figure_read.py PATH/TO/mpe_learning_curve.jpg

The figure is ``assets/mpe_learning_curve.jpg`` in PKU-MARL/HARL at d539bad (not kept here:
it is HARL's). Its "Spread (continuous)" panel has the frame, gridlines and axes located
below (pixels of the 1180 x 580 image: the gridlines at -60, -70 and -80 lie at rows 57, 89
and 121; the ones at 0, 2M, ..., 10M env steps at columns 861, 921, ..., 1160). Each curve is
found by its colour: per column of the window, the mean row of the pixels within
``TOLERANCE`` of the curve's colour (sampled off the curve's core, where the lines do not
overlap), then the mean over the window's columns. MATD3 and HATD3 overlap from 1M on and
their colours merge there, so one reading stands for both.
"""

import sys

import numpy as np
from PIL import Image

ROW_MINUS_60, ROWS_PER_UNIT = 57.0, 3.2  # -60 at row 57, one return unit = 3.2 rows
COLUMN_0, COLUMNS_PER_STEP = 861.0, 29.9 / 1e6  # 0 env steps at column 861, 2M steps = 59.8 columns
PANEL_ROWS = slice(30, 200)
TOLERANCE = 45.0
COLOURS = {"MADDPG": (140, 55, 45), "HADDPG": (205, 20, 20), "MATD3 and HATD3": (225, 35, 230)}
WINDOWS = ((0.45e6, 0.55e6), (0.95e6, 1.05e6), (1.9e6, 2.1e6), (2.9e6, 3.1e6), (4.5e6, 5.0e6))


def team_return(row: float) -> float:
    return -60.0 - (row - ROW_MINUS_60) / ROWS_PER_UNIT


def read(image: np.ndarray, colour: tuple[int, int, int], start: float, end: float) -> float | None:
    """The curve's mean team return over env steps [start, end], or None where not found."""
    rows = []
    for column in range(round(COLUMN_0 + start * COLUMNS_PER_STEP), round(COLUMN_0 + end * COLUMNS_PER_STEP) + 1):
        pixels = image[PANEL_ROWS, column]
        near = np.flatnonzero(np.linalg.norm(pixels - np.asarray(colour, float), axis=1) < TOLERANCE)
        if near.size:
            rows.append(PANEL_ROWS.start + near.mean())
    return team_return(float(np.mean(rows))) if rows else None


def main(path: str) -> None:
    image = np.asarray(Image.open(path).convert("RGB"), dtype=float)
    print("curve           " + "".join(f"{a / 1e6:.2f}-{b / 1e6:.2f}M".rjust(13) for a, b in WINDOWS))
    for name, colour in COLOURS.items():
        values = [read(image, colour, a, b) for a, b in WINDOWS]
        print(f"{name:16s}" + "".join(("-" if v is None else f"{v:.1f}").rjust(13) for v in values))


if __name__ == "__main__":
    main(sys.argv[1])
