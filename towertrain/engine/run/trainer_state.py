"""What a Trainer's state rules out, refused in one line (TrainerStateError)
instead of a step on stopped input or a train() that trains nothing and
reports a loss of nan."""
from towertrain.errors import TrainerStateError


def check_open(closed, method):
    """close() stopped the input and released the devices: nothing steps after it."""
    if closed:
        raise TrainerStateError(
            f"trainer.{method}(): this Trainer is closed (close() stopped its input and "
            "released its devices); make a new Trainer to train on (trainer.save(path) "
            "before close() and trainer.restore(path) after keep the weights)")


def check_steps_left(done, total):
    """train() trains up to the planned total step; with none left (a second
    train(), or step() calls that reached it) it would train nothing."""
    if done >= total:
        raise TrainerStateError(
            f"trainer.train(): this Trainer has trained all {total} planned steps (global "
            f"step {done}), so there is nothing left to train; to train further, give Params "
            "a larger num_batches (or num_epochs) in a new Trainer (with train_dir= it resumes "
            "from the checkpoint; without, trainer.save(path) then new_trainer.restore(path))")
