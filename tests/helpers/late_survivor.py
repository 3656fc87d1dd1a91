"""A towertrain worker that notices a lost peer late, as on a loaded machine
(`python -m towertrain.launch --module=helpers.late_survivor -- <flags>`):
task $LATE_SURVIVOR_TASK says its lost-peer line $LATE_SURVIVOR_SECS seconds
after its step failed, when the other survivors have long said theirs."""
import os
import time

from towertrain.commands import train


def _late(real, task, seconds):
    def cluster_failure(cluster, err, *args, **kwargs):
        if cluster.task_index == task:
            time.sleep(seconds)
        return real(cluster, err, *args, **kwargs)
    return cluster_failure


if __name__ == "__main__":
    train._cluster_failure = _late(train._cluster_failure,
                                   int(os.environ["LATE_SURVIVOR_TASK"]),
                                   float(os.environ["LATE_SURVIVOR_SECS"]))
    train.run()
