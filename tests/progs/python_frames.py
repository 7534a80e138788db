# Allocations of known sizes from known Python code, for the root suite's Python frames test
# (tests/root/test_stacks.cpp): bytearray(N) mallocs N + 1 bytes. Lines are found by their
# STACK_MARK comments.
import json
import os
import sys
import threading
import time


class Store:
    def fill(self):
        return bytearray(1000003)  # STACK_MARK(py-method)


def recurse(n):
    if n == 0:
        return bytearray(1000033)  # STACK_MARK(py-recurse-leaf)
    return recurse(n - 1)  # STACK_MARK(py-recurse-call)


def gen():
    yield bytearray(1000037)  # STACK_MARK(py-gen)


def hook(d):
    d["blob"] = bytearray(1000039)  # STACK_MARK(py-hook)
    return d


keep = []


def in_thread():
    keep.append(bytearray(1000081))  # STACK_MARK(py-thread)


def in_child():
    keep.append(bytearray(1000099))  # STACK_MARK(py-child)


def main():
    keep.append(Store().fill())  # STACK_MARK(py-main-method)
    keep.append(recurse(3))  # STACK_MARK(py-main-recurse)
    keep.extend(gen())  # STACK_MARK(py-main-gen)
    keep.append(json.loads('{"a": 1}', object_hook=hook))  # STACK_MARK(py-main-json)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    pid = os.fork()
    if pid == 0:
        in_child()  # STACK_MARK(py-main-fork)
        os._exit(0)
    os.waitpid(pid, 0)


# `python_frames.py READY GO`: a process memtrack attaches to (the root suite's attach test)
# writes its pid to READY, then waits for GO to exist before it allocates.
if len(sys.argv) == 3:
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
main()  # STACK_MARK(py-module)
