"""The run-cause model's own forest vote gives exactly scikit-learn's predictions."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pathwatch.models import run_cause


@pytest.fixture(scope="module")
def model():
    found = run_cause.shared_model()
    assert found is not None, "the run-cause artifact (models/artifacts/run_cause.joblib) is committed and must load"
    return found


def test_forest_vote_is_the_forests_predict(model):
    rng = np.random.default_rng(11)
    forest = model.estimator
    for _ in range(200):
        rows = rng.random((int(rng.integers(1, 9)), len(run_cause.FEATURES))) * rng.choice([0.01, 1.0, 4.0, 50.0])
        rows[rng.random(rows.shape) < 0.1] = 0.0
        assert model.predict(rows) == list(forest.predict(rows))
        assert list(run_cause.forest_vote(forest, rows)) == list(forest.predict(rows))


def test_rows_that_are_not_finite_go_to_scikit_learn(model):
    rows = np.array([[0.5, 0.1, 0.2, np.nan, 0.0, 1.0, 0.3]])
    try:
        expected = list(model.estimator.predict(rows))
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error)[:20])):
            model.predict(rows)
    else:
        assert model.predict(rows) == expected
