#!/usr/bin/env python3
"""Time from starting `dsh` on a pseudo-terminal to its first frame (the status line).

Usage: scripts/tui-first-frame.py [DSH_BINARY] [RUNS]

Each run starts the binary in a fresh $DSH_HOME and an empty workspace on an 80x24 pty,
answers the terminal's cursor-position query the way a terminal would, and stops the clock
when the status line ("idle ·") has been written. No model is contacted before the first
frame. Prints the median and p90 in milliseconds.
"""
import fcntl, os, pty, select, signal, struct, sys, tempfile, termios, time

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/dsh")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
samples = []
for _ in range(runs):
    home = tempfile.mkdtemp()
    work = tempfile.mkdtemp()
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        env = dict(os.environ, DSH_HOME=home, TERM="xterm-256color")
        os.execve(binary, [binary, "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = b""
    elapsed = None
    while elapsed is None:
        ready, _, _ = select.select([fd], [], [], 5)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        seen += data
        if b"\x1b[6n" in data:
            os.write(fd, b"\x1b[1;1R")
        if "idle ·".encode() in seen:
            elapsed = time.perf_counter() - start
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    os.close(fd)
    if elapsed is None:
        sys.exit("no first frame; the output was: %r" % seen[-400:])
    samples.append(elapsed * 1000)
samples.sort()
print("dsh start to first frame over %d runs: median %.1f ms, p90 %.1f ms"
      % (runs, samples[len(samples) // 2], samples[int((len(samples) - 1) * 0.9)]))
