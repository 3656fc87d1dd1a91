"""Small messages. --data_dir naming a file says so;
--model=resnet-20 gets a "did you mean"; the header shows the weight decay
and counts one device in the singular."""
from towertrain import Params, Trainer
from towertrain.config.cluster_spec import Cluster
from towertrain.plan import describe

from helpers import plans, refusals


def test_a_data_dir_naming_a_file_says_so(tmp_path, capsys):
    path = tmp_path / "data_batch_1.bin"
    path.write_bytes(b"")
    status, err = refusals.run_cli([f"--data_dir={path}"], capsys)
    assert (status, err) == (2, f"towertrain: error: --data_dir={path}: is a file, not a "
                                "directory; give the directory that holds the data files\n")


def test_a_misspelled_model_gets_a_did_you_mean(capsys):
    status, err = refusals.run_cli(["--model=resnet-20"], capsys)
    assert status == 2
    assert err.startswith("towertrain: error: --model=resnet-20: unknown model (did you mean "
                          "resnet20?); known models: "), err


def test_the_header_shows_the_weight_decay():
    trainer = Trainer(Params(model="trivial", device="cpu", weight_decay=1e-4))
    try:
        assert dict(trainer.header_info())["Weight decay"] == "0.0001"
    finally:
        trainer.close()


def test_one_device_per_worker_is_singular():
    two_by_one = Cluster(workers=("a:1", "b:2"), task_index=0, source="worker_hosts")
    params = Params(model="trivial", device="cpu", variable_update="collective_all_reduce")
    plan = plans.run_plan(params, cluster=two_by_one)
    assert describe.static_lines(plan)["Cluster"] == "2 workers x 1 device"
