"""A resume at the same global batch says "continues exactly" only when the
learning rate is the record's: a model's recipe scales its rate with the
exchange and the devices (tf_cnn_benchmarks' replicated sums the towers'
gradients), so 2 replicated devices -> 1, or replicated -> parameter_server,
trains resnet20 at 0.1 instead of 0.2; the header says CHANGED and why."""
from models import recipes
from towertrain.plan.learning_rate import model_recipe, source
from towertrain.recipe import lr_schedule
from towertrain.state.resume import contract
from towertrain.state.resume.topology import RecordedTopology

WHY = (" (the model's recipe scales its rate with the exchange and the devices, as "
       "tf_cnn_benchmarks does; give --init_learning_rate or "
       "--piecewise_learning_rate_schedule to set the rate yourself)")


def _entry(variable_update, towers, global_batch=2):
    rate = model_recipe.learning_rate(recipes.RESNET_CIFAR, "resnet20", global_batch, 50000,
                                      "known", variable_update, towers, 1)
    return source.record_entry(lr_schedule.build(rate))


def test_the_record_keeps_the_scaled_rates():
    assert _entry("replicated", 2)["values"] == [0.2, 0.02, 0.002, 0.0004]
    assert _entry("replicated", 1)["values"] == [0.1, 0.01, 0.001, 0.0002]


def test_two_replicated_devices_to_one_or_to_parameter_server_is_a_changed_rate():
    record = {"learning_rate": _entry("replicated", 2)}
    for now in (_entry("replicated", 1), _entry("parameter_server", 2)):
        assert contract.learning_rate_change(record, now) == [(
            "Learning rate", "CHANGED at resume: 0.2, 0.02, 0.002, 0.0004 in the run record, "
            "now 0.1, 0.01, 0.001, 0.0002" + WHY)]
    # The same rates: nothing to say; an older record without them: not compared.
    assert contract.learning_rate_change(record, _entry("replicated", 2)) == []
    assert contract.learning_rate_change({"learning_rate": {"source": "recipe"}},
                                         _entry("replicated", 1)) == []


def test_continues_exactly_only_with_the_same_rate():
    topology = RecordedTopology(2, 1, 1)
    topology.saved = (2, 1, 2)  # written by 2 devices, now 1, the same global batch
    shape = "checkpoint written by 1 worker(s) x 2 device(s), now 1 x 1"
    assert topology.header_info() == [
        ("Topology", f"{shape}; same global batch 2: continues exactly")]
    assert topology.header_info(rate_changed=True) == [
        ("Topology", f"{shape}; same global batch 2, but the learning rate CHANGED (below), "
                     "so it does not continue exactly")]


def test_the_command_line_says_the_rate_changed_and_not_continues_exactly(tmp_path):
    """Through the door: resnet20 saved by 2 replicated devices, resumed on 1
    at the same global batch of 2."""
    from helpers.cli import run_cases
    common = ["--model=resnet20", "--device=cpu", "--variable_update=replicated",
              "--num_warmup_batches=0", "--display_every=100", f"--train_dir={tmp_path}/run"]
    (code, _, err), (resumed, out, err2) = run_cases("train", [
        [*common, "--num_gpus=2", "--batch_size=1", "--num_batches=1"],
        [*common, "--num_gpus=1", "--batch_size=2", "--num_batches=2"]], tmp_path / "runs.json")
    assert (code, resumed) == (0, 0), err + err2
    assert ("CHANGED at resume: 0.2, 0.02, 0.002, 0.0004 in the run record, now 0.1, 0.01, "
            "0.001, 0.0002" + WHY) in out, out
    assert ("checkpoint written by 1 worker(s) x 2 device(s), now 1 x 1; same global batch 2, "
            "but the learning rate CHANGED (below), so it does not continue exactly") in out, out
    assert "continues exactly" not in out
