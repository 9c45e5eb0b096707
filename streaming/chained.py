"""The detect job's row functions that Flink chains behind the detectors, and the extension
modules they load first.

PyFlink's thread mode gives each Python operator its own Python thread state, and the operators
Flink chains into one task share one OS thread. CPython's PyGILState API knows only the first
thread state of an OS thread, so an extension built with pybind11 (scipy.spatial, scipy.fft and
scipy.optimize have some) whose first import runs under a later operator's thread state calls
PyGILState_Ensure, waits for the GIL its own thread holds, and the task hangs in INITIALIZING
for ever, holding up every other Python operator of the TaskManager. Flink opens a chain's
operators from the last one, so the filters and the key selector below open before the
detectors on their thread: being defined here, unpickling them imports this module, which loads
those extensions under the thread's first thread state. Functions of an importable module are
pickled by reference, not by value like the job file's own.

>>> not_dead(("anomaly", "k", "{}")), is_dead(("dead", "k", "{}")), incidents_key(("anomaly", "k", "{}"))
(True, True, 'incidents')
"""

from __future__ import annotations

# Imported for their side effect: every pybind11 extension the detectors may load, loaded now.
import scipy.fft  # noqa: F401
import scipy.optimize  # noqa: F401
import scipy.spatial  # noqa: F401
import scipy.stats  # noqa: F401
import sklearn.ensemble  # noqa: F401


def not_dead(row) -> bool:
    """Anomalies and path announcements (to the incidents operator)."""
    return row[0] != "dead"


def is_dead(row) -> bool:
    """Dead letters (straight to their topic)."""
    return row[0] == "dead"


def incidents_key(_row) -> str:
    """One key: every anomaly goes to the one grouping task."""
    return "incidents"
