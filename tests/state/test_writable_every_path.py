"""docs: "every path a run or export writes (--train_dir, --summary_dir,
--trace_file, export's --output and --saved_model) is checked before the first
step". Every member of that list, each one under a regular file (unwritable
for any user, root included), through the command line in this process;
export's two are in test_export_options.py and test_writable_paths.py."""
import os

import pytest

from helpers import refusals

RUN_PATHS = [
    ("train_dir", "run", []),
    ("summary_dir", "events", ["--summary_verbosity=1"]),
    ("summary_dir", "events", ["--profile_steps=2,3"]),  # alone: no summaries asked
    ("trace_file", "trace.json", []),
]


@pytest.mark.parametrize("flag,name,extra", RUN_PATHS,
                         ids=[" ".join([flag, *extra]) for flag, _, extra in RUN_PATHS])
def test_each_path_a_run_writes_is_checked_before_anything(tmp_path, monkeypatch, capsys,
                                                           flag, name, extra):
    blocked = tmp_path / "a_file"
    blocked.write_text("x")
    args = ["--model=trivial", "--device=cpu", f"--{flag}={blocked}/{name}", *extra]
    if flag != "train_dir":
        args.append(f"--train_dir={tmp_path}/run")
    with refusals.stopped_before_work(monkeypatch):
        status, err = refusals.run_cli(args, capsys)
    assert status == 2, err
    assert err == (f"towertrain: error: --{flag}={blocked}/{name}: {blocked} is a file, not a "
                   "directory; choose a path this user can write (checked before training, "
                   "nothing was written)\n")
    assert os.listdir(tmp_path) == ["a_file"]  # not even --train_dir
