"""The run-cause model's forest vote against scikit-learn's ``forest.predict`` as the oracle.

``RunCauseModel.predict`` counts the forest's vote itself (``forest_vote``), its only way to
predict: it must give what scikit-learn's ``predict`` gives, raise where that raises, and the
model must refuse an artifact that is not a single-output random forest.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sklearn
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from pathwatch.models import run_cause


@pytest.fixture(scope="module")
def model():
    found = run_cause.shared_model()
    assert found is not None, "the run-cause artifact (models/artifacts/run_cause.joblib) is committed and must load"
    return found


def test_the_vote_is_the_forests_predict(model):
    rng = np.random.default_rng(11)
    forest = model.estimator
    for _ in range(200):
        rows = rng.random((int(rng.integers(1, 9)), len(run_cause.FEATURES))) * rng.choice([0.01, 1.0, 4.0, 50.0])
        rows[rng.random(rows.shape) < 0.1] = 0.0
        assert model.predict(rows) == list(forest.predict(rows))
    one = rows[0]                                  # (one row of features, as 1-D)
    assert model.predict(one) == list(forest.predict(one[None, :]))


def test_missing_values_are_routed_as_the_forest_routes_them(model):
    rng = np.random.default_rng(12)
    forest = model.estimator
    for _ in range(200):
        rows = rng.random((int(rng.integers(1, 6)), len(run_cause.FEATURES))) * 5
        rows[rng.random(rows.shape) < 0.3] = np.nan
        assert model.predict(rows) == list(forest.predict(rows))


@pytest.mark.parametrize("rows", [
    np.array([[0.5, 0.1, 0.2, np.inf, 0.0, 1.0, 0.3]]),
    np.array([[0.5, 0.1, 0.2, 1e39, 0.0, 1.0, 0.3]]),      # (beyond float32: infinity once converted)
    np.zeros((1, 6)),
    np.zeros((0, 7)),
], ids=["infinity", "beyond float32", "six features", "no rows"])
def test_rows_the_forest_refuses_are_refused(model, rows):
    with pytest.raises(ValueError), np.errstate(over="ignore"):
        model.estimator.predict(rows)
    with pytest.raises(ValueError), np.errstate(over="ignore"):
        model.predict(rows)


def _save(tmp_path, estimator):
    """``estimator`` written as an artifact with its metadata, as RunCauseModel.save writes one."""
    import joblib

    path = tmp_path / "run_cause.joblib"
    joblib.dump(estimator, path)
    path.with_suffix(".json").write_text(json.dumps({"sklearn": sklearn.__version__, "version": "test"}))
    return path


@pytest.mark.parametrize("make", [
    lambda x, y: DecisionTreeClassifier(random_state=0).fit(x, y),
    lambda x, y: RandomForestClassifier(n_estimators=3, random_state=0).fit(x, np.column_stack([y, y])),
    lambda x, y: RandomForestClassifier(n_estimators=3),
], ids=["a tree", "two outputs", "unfitted"])
def test_an_artifact_that_is_not_a_single_output_forest_is_refused_by_its_path(tmp_path, make):
    rng = np.random.default_rng(13)
    x, y = rng.random((40, len(run_cause.FEATURES))), rng.choice(list(run_cause.CAUSES), 40)
    path = _save(tmp_path, make(x, y))
    with pytest.raises(TypeError, match=str(path)):
        run_cause.RunCauseModel.load(path)
