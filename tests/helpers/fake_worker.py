"""A stand-in worker for the launcher's tests (`python -m helpers.fake_worker`):
writes its pid to $FAKE_WORKER_DIR/task<K>.pid, then task $FAKE_WORKER_FAILS
exits 1 after a moment while the others sleep until killed.

With FAKE_WORKER_SURVIVORS_SAY=1 the others act as a real run's survivors:
once the failed task is gone they print the lost-peer line (peer_loss's
words) and then wait long, as a survivor waits for the others' health
checks; a start of $FAKE_WORKER_DONE_WITH workers (the elastic launch going
on with fewer) exits 0 at once."""
import os
import sys
import time

from towertrain.engine.distributed import peer_loss


def main(argv):
    task = int([a for a in argv if a.startswith("--task_index=")][0].split("=")[1])
    hosts = [a for a in argv if a.startswith("--worker_hosts=")][0].split("=")[1].split(",")
    with open(os.path.join(os.environ["FAKE_WORKER_DIR"], f"task{task}.pid"), "w") as f:
        f.write(str(os.getpid()))
    print(f"fake worker {task} up", flush=True)
    if str(len(hosts)) == os.environ.get("FAKE_WORKER_DONE_WITH"):
        return
    if task == int(os.environ["FAKE_WORKER_FAILS"]):
        time.sleep(1.0)
        print("failing", flush=True)
        sys.exit(1)
    if os.environ.get("FAKE_WORKER_SURVIVORS_SAY"):
        time.sleep(3.0)
        print(f"towertrain: error: worker task {task} lost worker task "
              f"{os.environ['FAKE_WORKER_FAILS']}; {peer_loss.next_words(None, task == 0, '')}",
              file=sys.stderr, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
