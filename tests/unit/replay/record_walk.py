# gdb script (scripts/record-walk.sh runs it): stops the program at the return of a malloc, calloc
# or realloc of at least MT_WALK_MIN_SIZE bytes called with a function matching MT_WALK_CALLER among its callers, and writes, for each output in
# MT_WALK_OUT (space-separated; one per successive hit), the raw capture walk_record compacts:
# the registers as memtrack's uretprobe sees them (after the ret), the stack from sp to the end
# of its mapping, the process's executable file mappings, and the frames gdb unwinds from there;
# in a CPython process also _PyRuntime's address, the thread's fs base and the writable mappings.
import os
import re

import gdb

outputs = os.environ["MT_WALK_OUT"].split()
caller = os.environ["MT_WALK_CALLER"]
depth = int(os.environ.get("MT_WALK_DEPTH", "12"))
min_size = int(os.environ.get("MT_WALK_MIN_SIZE", "0"))

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set breakpoint pending on")
# The whole stack, as memtrack walks it: past main, up to the entry point.
gdb.execute("set backtrace past-main on")
gdb.execute("set backtrace past-entry on")
# The program's own signals (the signal-frame capture raises one) are delivered, not stopped at.
gdb.execute("handle all nostop noprint pass")


class AllocationFrom(gdb.Breakpoint):
    """An allocator of libc's asked for at least min_size bytes (`size` reads its arguments),
    stopping only when a function matching `caller` is among its first callers."""

    def __init__(self, function, size):
        super().__init__(function)
        self.size = size

    def stop(self):
        if self.size() < min_size:
            return False
        frame = gdb.newest_frame().older()
        for _ in range(depth):
            if frame is None:
                return False
            if frame.name() and re.search(caller, frame.name()):
                return True
            try:
                frame = frame.older()
            except gdb.error:
                return False
        return False


def register(name):
    return int(gdb.parse_and_eval(name)) & 0xFFFFFFFFFFFFFFFF


def python_runtime():
    """The address of _PyRuntime, 0 in a process that is not CPython."""
    try:
        text = gdb.execute("info address _PyRuntime", to_string=True)
    except gdb.error:
        return 0
    found = re.search(r"is at (0x[0-9a-f]+)", text)
    return int(found.group(1), 16) if found else 0


def size(arguments, registers):
    """The size asked: from libc's argument names where its debug information is (a breakpoint
    then lands past the prologue, where the registers may have been reused), else registers."""
    try:
        return int(gdb.parse_and_eval(arguments))
    except gdb.error:
        return int(gdb.parse_and_eval(registers)) & 0xFFFFFFFFFFFFFFFF


# MT_WALK_AFTER (a gdb breakpoint spec): the allocators are watched only once it is hit (node
# is not stopped by a conditional breakpoint in libc set before it starts).
after = os.environ.get("MT_WALK_AFTER", "")
if after:
    gdb.execute(f"break {after}")
    gdb.execute("run")
    gdb.execute("delete")
# libc's own functions: "malloc" may name a PLT stub that -fno-plt code never calls.
AllocationFrom("__libc_malloc", lambda: size("bytes", "$rdi"))
AllocationFrom("__libc_calloc", lambda: size("n * elem_size", "$rdi * $rsi"))
AllocationFrom("__libc_realloc", lambda: size("bytes", "$rsi"))
gdb.execute("continue" if after else "run")


def mappings(pid):
    rows = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].strip() if len(parts) > 5 else ""
            rows.append((start, end, parts[1], int(parts[2], 16), path))
    return rows


for i, out in enumerate(outputs):
    if i:
        gdb.execute("continue")
    gdb.execute("finish")
    inferior = gdb.selected_inferior()
    pc, sp, bp = register("$pc"), register("$sp"), register("$rbp")
    maps = mappings(inferior.pid)
    stack = next(m for m in maps if m[0] <= sp < m[1])
    lo = sp & ~4095
    data = bytes(inferior.read_memory(lo, stack[1] - lo))
    with open(out, "w") as f:
        f.write(f"registers {pc:#x} {sp:#x} {bp:#x}\n")
        f.write(f"stack {lo:#x} {stack[1]:#x}\n")
        f.write(f"bytes {data.hex()}\n")
        for start, end, perms, offset, path in maps:
            if "x" in perms and path.startswith("/"):
                f.write(f"map {start:#x} {end:#x} {offset:#x} {path}\n")
        runtime = python_runtime()
        if runtime:
            # A CPython process: what its Python frames are read from (the writable mappings).
            f.write(f"python {runtime:#x}\n")
            f.write(f"fsbase {register('$fs_base'):#x}\n")
            for start, end, perms, offset, path in maps:
                if perms.startswith("rw") and path not in ("[stack]", "[vvar]") and end - start <= (64 << 20):
                    f.write(f"region {start:#x} {end:#x}\n")
                    f.write(f"bytes {bytes(inferior.read_memory(start, end - start)).hex()}\n")
        frame = gdb.newest_frame()
        while frame is not None:
            name = frame.name()
            if frame.type() == gdb.SIGTRAMP_FRAME:
                name = "<signal>"
            # A function inlined into the frame's: the frame, not the inlining, is a frame of the walk.
            if frame.type() != gdb.INLINE_FRAME:
                f.write(f"gdb {frame.pc():#x} {name or '??'}\n")
            try:
                frame = frame.older()
            except gdb.error:
                break
gdb.execute("kill")
