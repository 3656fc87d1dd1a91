"""Every refusal, triggered through the command line (`python -m towertrain`'s
parser and main, in this process; nothing runs past the checks).

The table's completeness is checked against the code: every `fail(...)` and
`raise ParamsError/ClusterError(...)` in towertrain/config and towertrain/plan
is found by walking their syntax trees, and a site that no case below reaches
fails test_every_refusal_site_has_a_case, naming the site. Add a case for a
new refusal where it belongs; a site the command line cannot reach goes in
LIBRARY_CASES (through Params/Trainer) with the reason."""
import json

import pytest

from helpers import refusals
from helpers.cifar_files import write_dataset

# tf.distribute's resolvers read these; each case sets its own.
CLUSTER_ENV = ("TF_CONFIG", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST",
               "SLURM_STEP_TASKS_PER_NODE")
TWO_WORKERS_TF_CONFIG = {"TF_CONFIG": json.dumps({
    "cluster": {"worker": ["127.0.0.1:7001", "127.0.0.1:7002"]},
    "task": {"type": "worker", "index": 0}})}
ONE_WORKER_TF_CONFIG = {"TF_CONFIG": json.dumps({
    "cluster": {"worker": ["127.0.0.1:7001"]}, "task": {"type": "worker", "index": 0}})}
TWO_SLURM_TASKS = {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2",
                   "SLURM_STEP_NODELIST": "127.0.0.1", "SLURM_STEP_TASKS_PER_NODE": "2"}
COLLECTIVE = "--variable_update=collective_all_reduce"
DATASETS_FLAGS = ["--datasets_use_prefetch", "--datasets_prefetch_buffer_size=2",
                  "--datasets_num_private_threads=1", "--datasets_use_caching",
                  "--datasets_parallel_interleave_cycle_length=2",
                  "--datasets_sloppy_parallel_interleave",
                  "--datasets_parallel_interleave_prefetch=2",
                  "--datasets_repeat_cached_sample"]


def _name(flag):
    return flag[2:].split("=")[0]


# (command line, the error's start, environment). {data}: a CIFAR-10 directory.
CASES = [
    # --datasets_* apply to --data_dir with --input=dataset: each is refused
    # without --data_dir, and with --data_dir but another --input.
    *[([flag], f"--{_name(flag)}=", "only applies to a tf.data pipeline over files "
       "(--data_dir with --input=dataset)", None) for flag in DATASETS_FLAGS],
    *[(["--data_dir={data}", "--input=queue", flag], f"--{_name(flag)}=",
       "only applies to a tf.data pipeline over files", None) for flag in DATASETS_FLAGS],
    (["--data_dir={data}", "--input=dataset", "--nodatasets_use_prefetch",
      "--datasets_prefetch_buffer_size=4"], "--datasets_prefetch_buffer_size=4: ",
     "conflicts with --nodatasets_use_prefetch; drop one", None),
    # --batch_group_size on synthetic data, at its default value and above.
    (["--batch_group_size=1"], "--batch_group_size=1: ", "needs --data_dir", None),
    (["--batch_group_size=2"], "--batch_group_size=2: ", "needs --data_dir", None),
    # --sync_batch_norm across workers, wherever the cluster comes from.
    ([COLLECTIVE, "--sync_batch_norm", "--worker_hosts=127.0.0.1:7001,127.0.0.1:7002"],
     "--sync_batch_norm=True: ", "is not supported across workers yet\n", None),
    ([COLLECTIVE, "--sync_batch_norm", "--cluster_source=tf_config"],
     "--sync_batch_norm=True: ", "is not supported across workers yet (this run's cluster "
     "has 2 workers, from TF_CONFIG)", TWO_WORKERS_TF_CONFIG),
    ([COLLECTIVE, "--sync_batch_norm"], "--sync_batch_norm=True: ",
     "is not supported across workers yet (this run's cluster has 2 workers, from TF_CONFIG)",
     TWO_WORKERS_TF_CONFIG),
    ([COLLECTIVE, "--sync_batch_norm", "--cluster_source=slurm", "--device=cpu"],
     "--sync_batch_norm=True: ", "is not supported across workers yet (this run's cluster "
     "has 2 workers, from Slurm)", TWO_SLURM_TASKS),
    ([COLLECTIVE, "--sync_batch_norm", "--device=cpu"], "--sync_batch_norm=True: ",
     "is not supported across workers yet (this run's cluster has 2 workers, from Slurm)",
     TWO_SLURM_TASKS),
]

# Command lines next to a refusal that must get past every check.
ACCEPTED = [
    (["--data_dir={data}", "--input=dataset", "--datasets_prefetch_buffer_size=4"], None),
    (["--data_dir={data}", "--input=dataset", *DATASETS_FLAGS[:4]], None),
    (["--data_dir={data}", "--batch_group_size=2"], None),
    ([COLLECTIVE, "--sync_batch_norm"], ONE_WORKER_TF_CONFIG),
    ([COLLECTIVE, "--sync_batch_norm", "--cluster_source=tf_config"], ONE_WORKER_TF_CONFIG),
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_dataset(str(tmp_path_factory.mktemp("cifar")), num_train=32, num_test=16)


def _args(args, data_dir):
    return ["--model=trivial", "--device=cpu", *[a.replace("{data}", data_dir) for a in args]]


def _environment(monkeypatch, env):
    for name in CLUSTER_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)


def _run(args, env, data_dir, monkeypatch, capsys):
    with monkeypatch.context() as patch:
        _environment(patch, env)
        with refusals.stopped_before_work(patch):
            return refusals.run_cli(_args(args, data_dir), capsys)


@pytest.mark.parametrize("args,start,words,env", CASES,
                         ids=[" ".join(case[0]) for case in CASES])
def test_each_refusal_is_one_line_naming_its_flag_with_exit_2(
        args, start, words, env, data_dir, monkeypatch, capsys):
    status, err = _run(args, env, data_dir, monkeypatch, capsys)
    assert status == 2, err
    assert err.startswith(f"towertrain: error: {start}") and words in err, err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize("args,env", ACCEPTED, ids=[" ".join(case[0]) for case in ACCEPTED])
def test_the_neighbours_of_a_refusal_are_accepted(args, env, data_dir, monkeypatch, capsys):
    with pytest.raises(refusals.NotRefused):
        status, err = _run(args, env, data_dir, monkeypatch, capsys)
        pytest.fail(f"refused ({status}): {err}")
