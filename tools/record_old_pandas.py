"""Keep real pickles of an older pandas as test data, and the names they import, for rules/allow-tabular.yaml.

Why: pandas 3 pickles name `pandas.DataFrame`; pandas 2 (still what most saved frames were written with) names
`pandas.core.frame.DataFrame`, its block manager and its NumPy's rebuild helpers. The test extra installs one
pandas, so the older one's files are made once, here, and committed: tools/gen_tabular_allowlist.py adds the
names in each folder's names.txt, and test_benign_real scans the pickles.

Run with the older pandas, from the project root, in a virtualenv of its own (never the test extra's):
    python tools/record_old_pandas.py tests/data/old_pandas/pandas-2.2.3-numpy-1.26.4
The catalogue is tests/helpers/tabular.py's (pandas and pyarrow objects), one pickle each at pandas' own
to_pickle protocol. The pickles are this tool's own, made a moment before; loading them to record is safe.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path

from pack_file import record_folder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.tabular import arrow_objects, pandas_objects  # noqa: E402


def main(folder: Path) -> None:
    import numpy
    import pandas

    warnings.simplefilter("ignore")
    folder.mkdir(parents=True, exist_ok=True)
    header = f"imported by pickles of pandas {pandas.__version__} with NumPy {numpy.__version__}"
    # at pickle's highest protocol, which DataFrame.to_pickle writes
    record_folder(folder, {**pandas_objects(), **arrow_objects()}, pickle.HIGHEST_PROTOCOL, header)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
