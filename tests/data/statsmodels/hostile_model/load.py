"""`python load.py FILE MARKER`: load one of the files here and use it as its library documents; says whether the
file's formula touched MARKER."""

import os
import pickle
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
with open(sys.argv[1], "rb") as file:
    loaded = pickle.load(file)
try:
    if hasattr(loaded, "classify"):
        loaded.classify({"w": "a", "x": 1})  # NLTK
    else:
        loaded.decision_function(np.random.RandomState(1).randn(5, 3))  # PyOD
except Exception as error:  # the payload ran before the library noticed the odd model
    print("raised after use:", type(error).__name__)
print("marker exists:", os.path.exists(sys.argv[2]))
