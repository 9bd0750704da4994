"""Peak-RSS measurement for the memory-bound subprocess scripts of this suite (Linux).

``ru_maxrss`` cannot measure a child's own peak: at ``execve`` Linux keeps the peak of
the memory the process had before (a fork of its parent: a long pytest run holds
gigabytes), so every growth read 0 in a full run and those checks could not fail.
``VmHWM`` (/proc/self/status) belongs to the program's own memory, and writing ``5``
to /proc/self/clear_refs resets it to the current RSS (Linux >= 4.0), so each step is
measured alone.  ``PEAK`` is source text prepended to the scripts.

In-process, :func:`traced_peak` gives the peak of the Python allocations (tracemalloc:
Python's and numpy's buffers, in every thread) while a function runs.
"""

import tracemalloc


def traced_peak(fn):
    """``(fn(), peak traced bytes while it ran)``."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        value = fn()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

PEAK = '''
def _proc_status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) << 10
    raise KeyError(field)


def peak_reset():
    """Reset the peak RSS to the current RSS; return the current RSS (bytes).  If the
    reset is refused, the peak stays higher: growth is overestimated, never hidden."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _proc_status("VmRSS")


def peak_growth(base):
    """Bytes the peak RSS rose above ``base`` (a ``peak_reset()`` result) since."""
    return _proc_status("VmHWM") - base
'''
