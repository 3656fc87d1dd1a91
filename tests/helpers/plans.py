"""Run plans for tests: the plan a Params gives on a CPU machine of known
facts, and the inputs made from it (towertrain.plan, engine/feed/input_factory)."""
from towertrain import plan
from towertrain.config.cluster_spec import SINGLE
from towertrain.config.machine import Machine

CPU_MACHINE = Machine(gpus=0, cores=2)


def layout(params, machine=CPU_MACHINE, cluster=SINGLE):
    """The first half of the plan of `params` (towertrain.plan.lay_out)."""
    return plan.lay_out(params, machine=machine, cluster=cluster)


def run_plan(params, steps_per_epoch=None, global_batch=None, **given):
    """The whole plan, for an input of `steps_per_epoch` batches of `global_batch`."""
    return plan.build(params, layout(params, **given),
                      plan.InputFacts(steps_per_epoch, global_batch))


def make_input(params, image_shape, num_classes, global_batch, dataset_name=None):
    """The input the run of `params` reads (dataset_name: --data_name), one
    process's `global_batch` examples per step."""
    from towertrain.engine.feed import input_factory
    if dataset_name is not None:
        params = params.replace(data_name=dataset_name)
    planned = layout(params)
    return input_factory.make_input(planned.input, planned.topology, image_shape=image_shape,
                                    num_classes=num_classes, per_process_batch=global_batch)
