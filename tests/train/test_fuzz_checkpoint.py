"""Generated checkpoint metadata (issue 55, item 3): a real checkpoint of a stopped job with
its metadata (format, code, job, config hash, stage, epochs, epoch, the epochs' history, the
presence and shape of its trainer and random states) dropped, retyped or out of range, read
back by the resumed job. The checkpoint is resumed (where the change leaves it valid) or
discarded with one warning; either way the job ends with the numbers of an uninterrupted run.

Budgets and how a failure is replayed: tests/fuzzing.py."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from hypothesis import note
from hypothesis import strategies as st

from pubench.train import checkpoint
from tests.fuzzing import time_limit
from tests.train.test_checkpoint import in_session, reference, same

STAGE = "toy stage 0.0"
METADATA = ("format", "code", "job_id", "config_hash", "stage", "desc", "epochs", "epoch", "history", "trainer", "rng")
ODD = [None, True, False, 0, -1, 3, 6, 7, 10**12, 2.5, float("nan"), "", "3", "toy stage 0.0", [], {}, [None],
       {"epoch": 0}, b"\x00"]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """The checkpoint a job stopped after epoch 3 of stage 0 wrote, and the uninterrupted run."""
    folder = tmp_path_factory.mktemp("stopped")
    torch.set_num_threads(1)
    out, _, session = in_session(folder, 2, stop_at=(0, 3))
    assert out is None
    payload = torch.load(session.path(STAGE), weights_only=False)
    return Stopped((payload, reference()))


class Stopped(tuple):
    def __repr__(self) -> str:
        return "Stopped(checkpoint after epoch 3, reference run)"


def mutated(payload: dict, draw) -> tuple[dict, list[str]]:
    payload = copy.deepcopy(payload)
    done = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(METADATA))
        op = draw(st.sampled_from(["drop", "retype", "history entry", "history length"]))
        if op == "drop":
            payload.pop(key, None)
        elif op == "history entry" and isinstance(payload.get("history"), list) and payload["history"]:
            entry = payload["history"][draw(st.integers(0, len(payload["history"]) - 1))]
            # a history retyped to [None] by an earlier mutation has entries that are not mappings
            entry = dict(entry) if isinstance(entry, dict) else {}
            field = draw(st.sampled_from(sorted(entry) + ["extra"]))
            if draw(st.booleans()):
                entry.pop(field, None)
            else:
                entry[field] = draw(st.sampled_from(ODD))
            payload["history"] = [*payload["history"][:-1], entry]
            key = f"history[-1].{field}"
        elif op == "history length" and isinstance(payload.get("history"), list):
            payload["history"] = payload["history"][:draw(st.integers(0, 5))] * draw(st.integers(1, 2))
        else:
            payload[key] = draw(st.sampled_from(ODD))
        done.append(f"{op} {key}")
    return payload, done


def test_a_checkpoint_with_mutated_metadata_resumes_or_is_discarded(stopped, tmp_path_factory, fuzz):
    fuzz.run(30, _a_checkpoint_with_mutated_metadata_resumes_or_is_discarded, stopped, tmp_path_factory)


def _a_checkpoint_with_mutated_metadata_resumes_or_is_discarded(stopped, tmp_path_factory, data):
    payload, ref = stopped
    planted, done = mutated(payload, data.draw)
    note(f"metadata: {done}")
    folder = tmp_path_factory.mktemp("planted")
    checkpoint.atomic_save(planted, checkpoint.Session(folder, 2).path(STAGE))
    with time_limit(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, _, session = in_session(folder, 2)
    discarded = [w for w in caught if issubclass(w.category, checkpoint.CheckpointWarning)]
    assert len(discarded) <= 1 and all("\n" not in str(w.message) for w in discarded)
    truthful = planted.get("epoch") == 3 and planted.get("history") == payload["history"]
    if discarded or truthful:
        assert discarded or session.resumed == [{"stage": STAGE, "epoch": 3}], (done, session.resumed)
        same(out, ref)
    # else: a planted progress of the right types (another epoch, a history as long as it says) is
    # resumed as it says: a file that lies in the store's own format can change numbers, as a
    # planted record can (docs/reliability.md, "What a shared store trusts"); it ran to the end
