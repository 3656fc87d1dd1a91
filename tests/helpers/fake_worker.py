"""A stand-in worker for the launcher's tests (`python -m helpers.fake_worker`):
writes its pid to $FAKE_WORKER_DIR/task<K>.pid, then task $FAKE_WORKER_FAILS
exits 1 after a moment while the others sleep until killed."""
import os
import sys
import time


def main(argv):
    task = int([a for a in argv if a.startswith("--task_index=")][0].split("=")[1])
    with open(os.path.join(os.environ["FAKE_WORKER_DIR"], f"task{task}.pid"), "w") as f:
        f.write(str(os.getpid()))
    print(f"fake worker {task} up", flush=True)
    if task == int(os.environ["FAKE_WORKER_FAILS"]):
        time.sleep(1.0)
        print("failing", flush=True)
        sys.exit(1)
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
