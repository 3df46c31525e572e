"""Pickle streams against CPython's unpicklers (fuzz/pickle_oracle.py): every global the C `pickle.Unpickler` or
the pure-Python `pickle._Unpickler` resolves (find_class returns a harmless stub, so nothing real runs) must be among
the names wscan's pickle scanner reports for the same bytes as `model.pkl`, unless wscan fails the file anyway (a
finding of high severity or more). A name resolved and not reported, in a file wscan passes, is a bypass candidate.
"""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness
    import pickle_oracle

    from wscan.model import Severity
    from wscan.scanners.pickle import PickleScanner

SCANNERS = [PickleScanner()]


def one_input(data: bytes) -> None:
    found = harness.drive(SCANNERS, data, "model.pkl")
    gaps = pickle_oracle.missing(data, found)
    if not gaps:
        return
    worst = max((f.severity for f in harness.rules().judge(found)), default=Severity.INFO)
    if worst >= Severity.HIGH:
        return
    names = ", ".join(f"{g.loader}:{g.raw}@{g.protocol}" for g in gaps[:5])
    raise harness.FuzzBug(f"resolved, not reported ({worst.name}): {names}")


if __name__ == "__main__":
    fuzz(one_input)
