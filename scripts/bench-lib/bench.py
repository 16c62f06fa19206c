#!/usr/bin/env python3
"""The driver of scripts/bench: measures ModalStack against a ceiling and a peer, on loopback.

  scripts/bench [--quick | --full | --callgrind | --perf] [--markdown FILE] [--duration S] [--repeats N]
                [--connections 16,64,256] [--sessions N] [--nice N] [--tmpdir DIR] [--no-postgres]
                [--callgrind-out DIR]

Run through scripts/bench, which installs what is missing, builds the release binary and passes
--binary. A measurement, not a test: it prints ratios against the targets and asserts nothing.

Method
------
* Everything runs on this machine over loopback. When at least two cores are available, the server
  under test (every process of it: ModalStack; the C ceiling; redis-server and webdis together) is
  pinned to the first half of the cores and wrk (one thread) to the other half (`taskset -c`);
  with 2 cores that is server on core 0, wrk -t1 on core 1. As root,
  servers and wrk run at nice -10, their scheduler autogroups too (/proc/PID/autogroup; with
  sched_autogroup nice alone does not reach across sessions), so that other work on the machine
  (a build) takes as little as possible from them (--nice 0 turns this off). "other %" in the
  table is the CPU time anything else got on the server's cores during the run (/proc/stat, in %
  of one core): high on a busy machine when the server leaves its core idle (waiting for fsync),
  a warning sign when the server itself is short of CPU. "steal %" is the time the hypervisor
  gave the machine's cores to others during the run (/proc/stat, in % of one core, server's and
  wrk's cores together): on a virtual machine the figures of a run with more than a few % of it
  are low by an unknown amount, whatever the target, so compare targets within one run.
* wrk, the same settings for every target: keep-alive, a fixed duration, each connection count,
  a 5 s request timeout, scripts/bench-lib/wrk.lua choosing the requests. Each measurement is
  repeated (3 times; once with --quick) and the median of each figure is reported. A short warm-up
  precedes each scenario and is not counted.
* Targets:
  - ceiling: scripts/ceiling/ceiling.c, libmicrohttpd with ModalStack's daemon flags
    (INTERNAL_POLLING_THREAD | EPOLL | ALLOW_SUSPEND_RESUME | ITC), the same thread pool (2) and
    connection limit, the response queued on the handler's last call, a fixed ~340-byte JSON body.
  - peer: redis-server (AOF on, `appendfsync everysec`, then `always`; no RDB snapshots) behind
    webdis (2 threads), each session a Redis list holding the same presentation JSON ModalStack
    stores: reads are `LRANGE bench-N 0 -1`, writes `LPUSH bench-N <the present's JSON>` then
    `LPOP bench-N`.
  - ModalStack (`--durability normal`, then `full`, `--threads 2`): reads `GET /v1/sessions/bench-N`,
    writes a present of {"destination":"settings","payload":{"n":k,"run":R}} then
    `POST …/dismiss {}` on the same session (a push, then a pop: every write is a committed change;
    see wrk.lua for how the pairs are ordered so that a dismiss never overtakes its present).
* Scenarios: read (random sessions), write (present+dismiss pairs; LPUSH+LPOP), mix (90 % reads,
  10 % writes), read-close (reads with `Connection: close`: a new TCP connection per request), and
  for ModalStack normal health (`GET /livez`: its whole HTTP stack — routing, request id, access
  log, metrics — with no session and no SQLite, the floor under its reads).
  Each scenario starts on a freshly started server holding the loaded sessions; within it, the
  write sequence goes on from run to run, so every session alternates present and dismiss (its
  stack, or list, holds the loaded entry plus at most the one pushed) — see wrk.lua.
* Sessions: one session is made through the API (a present of "profile"), then cloned row by row
  into N sessions bench-0 … bench-N-1 (10k; 1k with --quick) with Python's sqlite3 (every table,
  every row of that session, with its id and its presentation's id replaced), so the file is what
  the server itself writes, and loads in seconds even for 1M sessions. Every server run starts from
  a fresh copy. The peer's Redis gets the same N lists (redis-cli --pipe).
* Per measurement: requests/s, p50/p99 latency (wrk's, in ms), errors (socket errors, timeouts and
  HTTP statuses >= 400), the average response size (B/resp, headers included), the server's peak
  RSS (VmHWM from /proc/PID/status, reset through /proc/PID/clear_refs before each run; for the
  peer the sum of redis-server's and webdis's) and its CPU time during the run (utime + stime from
  /proc/PID/stat; CPU % is of one core; CPU µs/req is that time per request answered, which
  compares what targets spend per request even when one of them leaves its core idle; user µs and
  sys µs split the server's own part into user and kernel time: what parsing, rules and rendering
  cost against what sockets, writes and syncs cost).
* Naive one-fsync-per-request baseline: no server, only what bounds one. A process on the server's
  cores appends a 1 KiB record to a file in the benchmark's directory (the databases' filesystem)
  and calls fdatasync after each, for one run's duration; a server that syncs once per request
  cannot answer more requests/s than that. `--durability full` is compared against it.
* PostgreSQL rows (left out with --no-postgres): a PostgreSQL server of the benchmark's own
  (initdb in its directory, run as the postgres user when we are root; a free port; stopped and
  removed on every exit, by a watchdog if the driver is killed outright), durable as deployed:
  fsync and full_page_writes on, synchronous_commit as ModalStack sets it per connection (normal:
  off, full: on). It runs on the server's cores with the server under test, and its CPU (every
  postgres process, exited backends included, from /proc) is counted in the CPU figures of these
  rows and shown apart ("of it DB", µs per request); peak RSS is ModalStack's (or pg-naive's),
  not the database server's. Clients connect over TCP on 127.0.0.1.
  - pg naive (the bound, as the ceiling is for HTTP): scripts/ceiling/pg-naive.c, over libpq, on
    the server's cores, one thread and connection per wrk connection, for a run's duration, on a
    fresh database with tables shaped like ModalStack's: a read is a primary-key SELECT of a
    session row; a write one transaction (BEGIN, an upsert of a session row with a 1 KB stack, an
    insert of a 0.5 KB change row, COMMIT). Reads, writes with synchronous_commit off (normal),
    writes with it on (full). No HTTP: it bounds a server doing one transaction per request.
  - ModalStack pg 1× and 2× (when the binary has --database-url): one, then two instances on one
    fresh copy of a database holding the sessions (made through ModalStack on PostgreSQL, then
    cloned in SQL as for SQLite), --threads 2 as in SQLite mode, its default pool. With
    two, one wrk per instance, each with half the connections and its own half of the sessions
    (no session is written through both); requests/s summed, p50/p99 the worse of the two. Reads
    and writes with --durability normal, writes with full. Then one instance's reads with
    --max-staleness-ms 100 (the opt-in mode: a session in memory shown unconfirmed for 100 ms).
* --callgrind, instead of all the above: ModalStack's instructions per request, counted by
  valgrind's callgrind (all its threads, libmicrohttpd and SQLite included, the kernel not) over
  8 s of wrk at 16 connections on 256 sessions, after a 5 s warm-up (writes: after 8,192 changes
  and over at least 16,384, as rows are written back from the change records in a wave every 4,096
  changes): reads (session cache hits), GET /livez and present+dismiss pairs, each split by layer
  (HTTP, endpoint, rules, rendering, commit, and libmicrohttpd's memset; see LAYERS) and with the
  Swift functions that take most (inclusive); --callgrind-out DIR keeps the dumps for
  callgrind_annotate. The hypervisor's steal changes requests/s from run to run; it does not
  change these counts.
* --perf, instead of all the above: where ModalStack's CPU goes, the kernel included, which
  callgrind does not see. perf samples the server's core (999 Hz, with call chains; per core, as
  following each thread would cost at every switch) during 5 s of wrk at 64 connections on 1,024
  sessions, after a 2 s warm-up, for reads and for present+dismiss pairs. A kernel sample counts
  for the work its call chain shows (TCP/IP, epoll, futex and eventfd wake-ups, file reads,
  writes and syncs) or for switching threads; a user sample for the library of its innermost
  frame (SQLite, libmicrohttpd, the Swift runtime, libc's malloc, its memory functions) or
  ModalStack's own code (libpq too, on PostgreSQL). Shares of the server's samples, and CPU µs
  per request: each share of the server's CPU time per request, measured as in the main table.
  Then the same for one instance on PostgreSQL (unless --no-postgres): the instance's own
  samples and CPU, the database's left out (the main table gives it).
* Written per change: ModalStack normal on a fresh copy with `--log-level off`, one write run at
  64 connections; the bytes it wrote to its files (wchar in /proc/PID/io: the WAL, and the
  checkpoints' copies into the database file; its sockets are written with send(2), which wchar
  does not count, and a read run after it is logged to show so) over the changes made.
* Scaling: ModalStack (normal) with 1k, 10k, 100k sessions (and 1M with --full): start-up time
  (spawn until GET /readyz answers 200), RSS once ready, reads and writes at 64 connections with
  their peak RSS. With --quick only 1k, taken from the main ModalStack runs.
"""
import argparse, ctypes, datetime, os, re, resource, shutil, signal, socket, sqlite3, statistics, subprocess, sys, tempfile, time
import json

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LUA = os.path.join(HERE, "wrk.lua")
CEILING_SOURCE = os.path.join(ROOT, "scripts", "ceiling", "ceiling.c")
TEMPLATE_ID = "bench-template"
TEMPLATE_PRESENT = {"destination": "profile", "payload": {"user": "bench", "theme": "dark"}}
# --callgrind: few sessions, so that reads hit the session cache; few connections, as valgrind is slow.
CALLGRIND_SESSIONS = 256
CALLGRIND_CONNECTIONS = 16
CALLGRIND_FUNCTIONS = 25
# How many changes after a session's first unwritten one SQLite mode writes its row back
# (SQLiteSessionStore's writeBackAge).
WRITE_BACK_AGE = 4096
# --perf: sessions enough that a dismiss never overtakes its present at 64 connections.
PERF_SESSIONS = 1024
PERF_CONNECTIONS = 64
SERVER_THREADS = 2
# ModalStack on PostgreSQL suspends a GET of a session and a change while the database answers:
# as in SQLite mode, two HTTP worker threads.
PG_SERVER_THREADS = 2


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Processes: every one we start is recorded by PID and stopped by PID, even on Ctrl-C.

_libc = ctypes.CDLL(None, use_errno=True)


NICE = 0


def _prepare_child():
    # PR_SET_PDEATHSIG: if the driver is killed outright, its servers get SIGTERM.
    _libc.prctl(1, signal.SIGTERM, 0, 0, 0)
    if NICE:
        try:
            os.nice(NICE)
        except OSError:
            pass


class Processes:
    def __init__(self):
        self.running = []

    def start(self, argv, cpus=None, stdin=None, stdout=None, stderr=None):
        if cpus:
            argv = ["taskset", "-c", cpus] + argv
        process = subprocess.Popen(argv, stdout=stdout or subprocess.DEVNULL, stderr=stderr or subprocess.DEVNULL,
                                   stdin=stdin or subprocess.DEVNULL, start_new_session=True, preexec_fn=_prepare_child)
        self.running.append(process)
        if NICE:
            # With sched_autogroup, each session (this process made a new one) is scheduled as a
            # group, and the group's weight comes from /proc/PID/autogroup, not from nice alone.
            try:
                with open(f"/proc/{process.pid}/autogroup", "w") as autogroup:
                    autogroup.write(str(NICE))
            except OSError:
                pass
        return process

    def stop(self, process, grace=15.0):
        if process.poll() is None:
            try:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            except ProcessLookupError:
                pass
        if process in self.running:
            self.running.remove(process)

    def stop_all(self):
        for process in reversed(list(self.running)):
            self.stop(process, grace=5.0)


PROCESSES = Processes()


def _terminate(signum, frame):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


# ---------------------------------------------------------------------------------------------
# /proc

def rss_kib(pid, field="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def cpu_seconds(pid):
    """The process's CPU time so far, in seconds: (user, system)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / ticks, int(fields[12]) / ticks
    except FileNotFoundError:
        return 0.0, 0.0


def cpu_seconds_by_kind(cpus):
    """The time these CPUs spent so far (from /proc/stat), in seconds: "busy" (user + nice +
    system) and "steal" (the hypervisor ran something else while they wanted to run)."""
    busy = steal = 0
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                busy += int(fields[0]) + int(fields[1]) + int(fields[2])
                steal += int(fields[7])
    ticks = os.sysconf("SC_CLK_TCK")
    return {"busy": busy / ticks, "steal": steal / ticks}


def reset_peak(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# HTTP and ports

def http(port, method, path, body=None, timeout=10.0):
    payload = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(head.encode() + b"\r\n" + payload)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    header, _, content = data.partition(b"\r\n\r\n")
    return int(header.split(b" ", 2)[1]), content


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port, process, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process {process.args} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.005)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


def wait_for_listening_line(path, process, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as log_file:
            match = re.search(r"listening on (\S+):(\d+)", log_file.read())
        if match:
            return int(match.group(2))
        if process.poll() is not None:
            with open(path, errors="replace") as log_file:
                raise RuntimeError(f"{process.args[-1]} exited with {process.returncode}: {log_file.read()[-2000:]}")
        time.sleep(0.002)
    raise RuntimeError(f"no 'listening on' line in {path} after {timeout} s")


# ---------------------------------------------------------------------------------------------
# Servers

class Server:
    """A started target: its ports (one per instance), the PIDs that make it (for RSS and CPU), the
    database server whose CPU counts as its own (PostgreSQL, or None) and how to stop it."""

    def __init__(self, name, ports, processes, startup=None, directory=None, database=None):
        self.name, self.ports, self.processes, self.startup = name, ports, processes, startup
        self.directory = directory  # removed once stopped
        self.database = database  # shared by the servers of a run: not stopped with this one

    @property
    def port(self):
        return self.ports[0]

    @property
    def pids(self):
        return [process.pid for process in self.processes]

    def stop(self):
        for process in self.processes:
            PROCESSES.stop(process)
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


LOG_NUMBERS = iter(range(1, 1 << 62))


def start_modalstack(bench, database, durability, wrapper=(), threads=SERVER_THREADS, options=()):
    """`database` is an SQLite file or a postgresql:// URL; `wrapper` runs the server under another
    program (valgrind); `options` go after the benchmark's own."""
    store = ["--database-url", database] if database.startswith("postgresql://") else ["--db", database]
    log_path = os.path.join(bench.tmp, f"modalstack-{durability}-{os.path.basename(database)}-{next(LOG_NUMBERS)}.log")
    with open(log_path, "w") as log_file:
        started = time.monotonic()
        process = PROCESSES.start(
            list(wrapper) + [bench.binary, "--host", "127.0.0.1", "--port", "0", *store,
                             "--durability", durability, "--threads", str(threads), *options],
            cpus=bench.server_cpus, stderr=log_file)
    port = wait_for_listening_line(log_path, process, timeout=120 if wrapper else 30)
    while True:
        try:
            if http(port, "GET", "/readyz")[0] == 200:
                break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() - started > 60:
            raise RuntimeError(f"ModalStack did not become ready; see {log_path}")
        time.sleep(0.002)
    return Server(f"ModalStack {durability}", [port], [process], startup=time.monotonic() - started)


def start_ceiling(bench):
    log_path = os.path.join(bench.tmp, "ceiling.log")
    with open(log_path, "w") as log_file:
        process = PROCESSES.start([bench.ceiling, "0", str(SERVER_THREADS)], cpus=bench.server_cpus, stderr=log_file)
    port = wait_for_listening_line(log_path, process)
    return Server("ceiling", [port], [process])


def start_peer(bench, fsync, sessions, element):
    directory = tempfile.mkdtemp(prefix=f"redis-{fsync}-", dir=bench.tmp)
    redis_port, http_port = free_port(), free_port()
    redis = PROCESSES.start(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--dir", directory, "--appendonly", "yes",
         "--appendfsync", fsync, "--save", "", "--daemonize", "no", "--logfile", os.path.join(directory, "redis.log")],
        cpus=bench.server_cpus)
    wait_for_port(redis_port, redis)
    # Load the sessions: one list per session holding the presentation's JSON, as ModalStack stores it.
    value = element.encode()
    commands = bytearray()
    for index in range(sessions):
        key = f"bench-{index}".encode()
        commands += b"*3\r\n$5\r\nRPUSH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value)
    loaded = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(redis_port), "--pipe"], input=bytes(commands),
                            capture_output=True, check=True)
    if b"errors: 0" not in loaded.stdout:
        raise RuntimeError(f"loading redis failed: {loaded.stdout.decode(errors='replace')}")
    config = {
        "redis_host": "127.0.0.1", "redis_port": redis_port, "redis_auth": None,
        "http_host": "127.0.0.1", "http_port": http_port, "threads": SERVER_THREADS,
        "daemonize": False, "database": 0, "acl": [{"disabled": ["DEBUG"]}],
        "verbosity": 0, "logfile": os.path.join(directory, "webdis.log"),
    }
    config_path = os.path.join(directory, "webdis.json")
    with open(config_path, "w") as config_file:
        json.dump(config, config_file)
    webdis = PROCESSES.start(["webdis", config_path], cpus=bench.server_cpus)
    wait_for_port(http_port, webdis)
    status, body = http(http_port, "GET", "/LRANGE/bench-0/0/-1")
    if status != 200 or b"profile" not in body:
        raise RuntimeError(f"webdis answers {status} {body[:200]!r}")
    return Server(f"webdis+redis {fsync}", [http_port], [webdis, redis], directory=directory)


# ---------------------------------------------------------------------------------------------
# The sessions: one made through the API, cloned into many with sqlite3

def make_template(bench):
    """Returns (the template database path, the stored presentation's JSON text)."""
    path = os.path.join(bench.tmp, "template.sqlite")
    server = start_modalstack(bench, path, "normal")
    try:
        status, body = http(server.port, "POST", f"/v1/sessions/{TEMPLATE_ID}/presentations", TEMPLATE_PRESENT)
        if status != 201:
            raise RuntimeError(f"the template present answered {status}: {body[:300]!r}")
        status, body = http(server.port, "GET", f"/v1/sessions/{TEMPLATE_ID}")
        session = json.loads(body)
        presentation = session["stack"][0]
    finally:
        server.stop()
    return path, presentation


def make_database(bench, path, sessions):
    """Clones the template session into bench-0 … bench-(sessions-1): every row of every table that
    names the template session, with the session id and the presentation id replaced."""
    started = time.monotonic()
    presentation_id = bench.presentation["id"]
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    source = sqlite3.connect(bench.template)
    target = sqlite3.connect(path, isolation_level=None)
    source.backup(target)
    source.close()
    target.execute("PRAGMA journal_mode=DELETE")
    target.execute("PRAGMA synchronous=OFF")
    target.execute("PRAGMA cache_size=-262144")
    tables = [name for (name,) in target.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    template_rows = {}
    for table in tables:
        columns = [row[1] for row in target.execute(f'PRAGMA table_info("{table}")')]
        rows = [row for row in target.execute(f'SELECT * FROM "{table}"')
                if any(isinstance(value, str) and TEMPLATE_ID in value for value in row)
                or any(isinstance(value, bytes) and TEMPLATE_ID.encode() in value for value in row)]
        if rows:
            template_rows[table] = (columns, rows)
    if "sessions" not in template_rows:
        raise RuntimeError("the template database has no sessions row for the template session")
    ids = sorted(f"bench-{index}" for index in range(sessions))  # key order: fast B-tree appends

    def substitute(value, session_id, new_presentation_id):
        if isinstance(value, str):
            return value.replace(TEMPLATE_ID, session_id).replace(presentation_id, new_presentation_id)
        if isinstance(value, bytes):
            return value.replace(TEMPLATE_ID.encode(), session_id.encode()).replace(
                presentation_id.encode(), new_presentation_id.encode())
        return value

    target.execute("BEGIN")
    for table, (columns, rows) in template_rows.items():
        quoted = ", ".join(f'"{column}"' for column in columns)
        match = " AND ".join(f'"{column}" IS ?' for column in columns)
        for row in rows:
            target.execute(f'DELETE FROM "{table}" WHERE {match}', row)
        insert = f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join("?" * len(columns))})'
        target.executemany(insert, (
            tuple(substitute(value, session_id, f"bp{session_id[6:]:0>22}") for value in row)
            for session_id in ids for row in rows))
    if "log_state" in tables:
        # Every clone's row holds its cloned changes, as a server that closed cleanly leaves the
        # file: nothing for recovery to replay at start-up.
        target.execute("UPDATE log_state SET written_through = (SELECT coalesce(max(rowid), 0) FROM changes)")
    target.execute("COMMIT")
    target.execute("PRAGMA journal_mode=WAL")
    target.close()
    log(f"database with {sessions} sessions: {os.path.getsize(path) / 2**20:.1f} MiB, "
        f"made in {time.monotonic() - started:.1f} s")


# ---------------------------------------------------------------------------------------------
# The naive baseline

NAIVE_SYNC_LOOP = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
record, count, started = b"x" * 1023 + b"\\n", 0, time.monotonic()
while time.monotonic() - started < float(sys.argv[2]):
    os.write(fd, record)
    os.fdatasync(fd)
    count += 1
print(count / (time.monotonic() - started))
"""


def naive_sync_rate(bench):
    """Appends with one fdatasync each, per second: the most a one-sync-per-request server answers."""
    path = os.path.join(bench.tmp, "naive.log")
    argv = [sys.executable, "-c", NAIVE_SYNC_LOOP, path, str(bench.duration)]
    if bench.server_cpus:
        argv = ["taskset", "-c", bench.server_cpus] + argv
    rates = [float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout) for _ in range(bench.repeats)]
    os.remove(path)
    return statistics.median(rates)


# ---------------------------------------------------------------------------------------------
# PostgreSQL: a throwaway server, the naive bound, ModalStack on it

PG_NAIVE_SOURCE = os.path.join(ROOT, "scripts", "ceiling", "pg-naive.c")
SYNCHRONOUS_COMMIT = {"normal": "off", "full": "on"}  # as ModalStack sets it per connection


def postgres_bin():
    """The newest /usr/lib/postgresql/*/bin (Debian's layout), or None."""
    root = "/usr/lib/postgresql"
    versions = [name for name in os.listdir(root) if os.access(f"{root}/{name}/bin/initdb", os.X_OK)] \
        if os.path.isdir(root) else []
    return f"{root}/{max(versions, key=int)}/bin" if versions else None


class Postgres:
    """A PostgreSQL server of the benchmark's own, durable as a deployment runs one: fsync and
    full_page_writes on, synchronous_commit left to each connection (ModalStack sets it by its
    durability). Its data directory is in the benchmark's directory (the databases' filesystem),
    its unix socket in a short directory of /tmp (a socket's path is limited to 107 bytes; psql
    administers over it), and the clients under test connect over TCP on 127.0.0.1, as to a
    database on another machine. It runs on the server's cores at the servers' niceness. initdb and
    the server refuse to run as root: as root they run as the postgres user. pg_ctl detaches the
    server from this process, so stop() stops it (main's `finally`: errors, Ctrl-C, SIGTERM), and a
    watchdog in a session of its own does so if the driver is killed outright."""

    def __init__(self, bench):
        self.bin = postgres_bin()
        if not self.bin:
            raise RuntimeError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.home = os.path.join(bench.tmp, "postgres")  # the data directory and the log
        self.data, self.port, self.watchdog = os.path.join(self.home, "data"), free_port(), None
        self.socket_dir = tempfile.mkdtemp(prefix="msbench-pg-", dir="/tmp")

    def start(self, bench, max_connections):
        os.mkdir(self.home)
        if self.as_postgres:
            os.chmod(bench.tmp, 0o711)  # the postgres user passes through to its own directory
            for directory in (self.home, self.socket_dir):
                shutil.chown(directory, "postgres", "postgres")
        self.tool("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8",
                  "--no-sync")  # the cluster is thrown away; what it runs is durable
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.socket_dir}'\nmax_connections = {max_connections}\n")
        argv = self.as_postgres + [f"{self.bin}/pg_ctl", "-D", self.data, "-l", os.path.join(self.home, "server.log"),
                                   "-w", "-t", "60", "start"]
        if bench.server_cpus:
            argv = ["taskset", "-c", bench.server_cpus] + argv  # the postmaster and its children inherit it
        self.run(argv)
        with open(os.path.join(self.data, "postmaster.pid")) as pid_file:
            self.postmaster = int(pid_file.readline())
        if NICE:
            # pg_ctl starts the server in a session of its own: a scheduler autogroup of its own too.
            with open(f"/proc/{self.postmaster}/autogroup", "w") as autogroup:
                autogroup.write(str(NICE))
        pg_ctl = " ".join(self.as_postgres + [f"'{self.bin}/pg_ctl'"])
        self.watchdog = subprocess.Popen(
            ["sh", "-c", f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
                         f"{pg_ctl} -D '{self.data}' -m immediate -w stop; rm -rf '{self.home}' '{self.socket_dir}'"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            cwd="/tmp")
        self.version = self.tool("postgres", "--version").strip()

    def run(self, argv):
        # Output into a file, not a pipe: the server pg_ctl starts would hold a pipe open until it stops.
        with tempfile.TemporaryFile() as output:
            # From /tmp: a directory the postgres user can enter.
            status = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output, cwd="/tmp",
                                    preexec_fn=_prepare_child).returncode
            output.seek(0)
            text = output.read().decode(errors="replace")
        if status != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({status}): {text[-2000:]}")
        return text

    def tool(self, name, *arguments):
        return self.run(self.as_postgres + [f"{self.bin}/{name}", *arguments])

    def sql(self, statements, database="postgres"):
        """Runs statements with psql over the unix socket; returns what they print (unaligned)."""
        return self.run([f"{self.bin}/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket_dir,
                         "-p", str(self.port), "-U", "postgres", "-d", database, "-c", statements])

    def fresh_database(self, name, template=None):
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.sql(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(name)

    def url(self, database):
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def cpu_seconds(self):
        """The CPU time of every process of the server so far: the postmaster and its children (the
        backends, the WAL writer, the checkpointer, autovacuum…), and those of its children that
        ended (the postmaster's cutime + cstime)."""
        total = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(name) == self.postmaster:
                total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
            elif int(fields[1]) == self.postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                self.tool("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
            except RuntimeError as error:
                log(f"stopping PostgreSQL: {error}")
        if self.watchdog:
            self.watchdog.kill()
            self.watchdog.wait()
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def load_postgres_sessions(bench, postgres):
    """Makes the database "loaded", the one each ModalStack run copies: the template session is
    presented through ModalStack on the PostgreSQL engine (so the rows are what that engine
    writes), then cloned in SQL into bench-0 … bench-(N-1), every row of every table that names it,
    as make_database does for SQLite."""
    started = time.monotonic()
    server = start_modalstack(bench, postgres.fresh_database("loaded"), "normal", threads=PG_SERVER_THREADS)
    try:
        status, body = http(server.port, "POST", f"/v1/sessions/{TEMPLATE_ID}/presentations", TEMPLATE_PRESENT)
        if status != 201:
            raise RuntimeError(f"the template present on PostgreSQL answered {status}: {body[:300]!r}")
        presentation_id = json.loads(http(server.port, "GET", f"/v1/sessions/{TEMPLATE_ID}")[1])["stack"][0]["id"]
    finally:
        server.stop()
    tables = {}
    for line in postgres.sql("SELECT table_name, column_name, data_type FROM information_schema.columns "
                             "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position", "loaded").splitlines():
        table, column, kind = line.split("|")
        tables.setdefault(table, []).append((column, kind))
    statements = []
    for table, columns in tables.items():
        values = ", ".join(
            f"""replace(replace("{column}", '{TEMPLATE_ID}', 'bench-' || n), '{presentation_id}', """
            f"""'bp' || lpad(n::text, 22, '0'))""" if kind == "text" else f'"{column}"' for column, kind in columns)
        names = f"candidate::text LIKE '%{TEMPLATE_ID}%'"  # the whole row as text
        statements += [f'CREATE TEMP TABLE template_rows AS SELECT * FROM "{table}" AS candidate WHERE {names}',
                       f'DELETE FROM "{table}" AS candidate WHERE {names}',
                       f'INSERT INTO "{table}" SELECT {values} FROM template_rows, '
                       f'generate_series(0, {bench.sessions - 1}) AS n',
                       'DROP TABLE template_rows']
    postgres.sql(";\n".join(statements), "loaded")
    postgres.sql("VACUUM ANALYZE", "loaded")
    log(f"PostgreSQL database with {bench.sessions} sessions made in {time.monotonic() - started:.1f} s")


# The label of ModalStack pg 1× with --max-staleness-ms 100.
STALE_READS = "stale≤100ms"


def start_modalstack_pg(bench, postgres, instances, durability, name=None, options=()):
    """`instances` ModalStack processes on one fresh copy of the loaded database."""
    url = postgres.fresh_database("run", template="loaded")
    servers = [start_modalstack(bench, url, durability, threads=PG_SERVER_THREADS, options=options)
               for _ in range(instances)]
    for server in servers:
        status, body = http(server.port, "GET", f"/v1/sessions/bench-{bench.sessions - 1}")
        if status != 200 or b'"profile"' not in body:
            raise RuntimeError(f"a loaded session reads {status} {body[:300]!r} from PostgreSQL")
    return Server(name or f"ModalStack pg {instances}× {durability}", [server.port for server in servers],
                  [process for server in servers for process in server.processes], database=postgres)


def run_pg_naive(bench, postgres, mode, connections, durability):
    """One run of scripts/ceiling/pg-naive.c on the server's cores, on a fresh database; its CPU
    and the database server's are taken between its "ready" and its result (see the program)."""
    url = postgres.fresh_database("naive")
    with open(os.path.join(bench.tmp, "pg-naive.log"), "a") as log_file:
        process = PROCESSES.start([bench.pg_naive, url, mode, str(connections), str(bench.duration),
                                   str(bench.sessions), SYNCHRONOUS_COMMIT[durability]],
                                  cpus=bench.server_cpus, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file)
    try:
        if process.stdout.readline() != b"ready\n":
            raise RuntimeError(f"pg-naive did not start; see {log_file.name}")
        reset_peak(process.pid)
        before = usage(bench, [process.pid], postgres)
        process.stdin.write(b"go\n")
        process.stdin.flush()
        line = process.stdout.readline().decode()
        after = usage(bench, [process.pid], postgres)
        peak = rss_kib(process.pid, "VmHWM")
        process.stdin.close()  # now it disconnects and exits
        process.wait(timeout=60)
    finally:
        PROCESSES.stop(process)
    match = re.search(r"BENCH_RESULT (.*)", line)
    if not match:
        raise RuntimeError(f"pg-naive printed no result ({line!r}); see {log_file.name}")
    values = {key: int(value) for key, value in (item.split("=") for item in match.group(1).split())}
    if values["errors"]:
        log(f"  pg naive {durability} {mode} c{connections}: {values['errors']} errors; see {log_file.name}")
    return {"requests": values["requests"], "rps": values["requests"] / (values["duration_us"] / 1e6),
            "p50": values["p50_us"] / 1000, "p99": values["p99_us"] / 1000, "rss": peak / 1024,
            **usage_figures(before, after, values["duration_us"] / 1e6, values["requests"]),
            "bytes": None, "errors": values["errors"]}


def measure_pg_naive(bench, postgres, durability, scenarios):
    rows = []
    for scenario in scenarios:
        for count in bench.connections:
            runs = [run_pg_naive(bench, postgres, scenario, count, durability) for _ in range(bench.repeats)]
            row = {"target": f"pg naive {durability}", "scenario": scenario, "connections": count, **median_of(runs)}
            log_row(row)
            rows.append(row)
    return rows


def accepts_database_url(binary):
    """Whether this modalstack has the PostgreSQL engine (`--database-url` in its --help)."""
    result = subprocess.run([binary, "--help"], capture_output=True, text=True)
    return "--database-url" in result.stdout + result.stderr


def measure_postgres(bench):
    """The PostgreSQL rows: the naive bound, then ModalStack with one and with two instances on
    one database (when this build has the engine). Returns (rows, the server's description)."""
    started = time.monotonic()
    postgres = Postgres(bench)
    try:
        # The naive bound's threads, one connection each, and the ModalStack instances' pools.
        postgres.start(bench, max_connections=max(bench.connections) + 100)
        log(f"{postgres.version} on port {postgres.port}, data in {postgres.data}")
        rows = measure_pg_naive(bench, postgres, "normal", ["read", "write"])
        rows += measure_pg_naive(bench, postgres, "full", ["write"])
        if accepts_database_url(bench.binary):
            load_postgres_sessions(bench, postgres)
            for instances in (1, 2):
                for durability, scenarios in (("normal", ["read", "write"]), ("full", ["write"])):
                    label = f"ModalStack pg {instances}× {durability}"
                    rows += measure(bench, lambda: start_modalstack_pg(bench, postgres, instances, durability),
                                    "modalstack", scenarios, bench.sessions, label)
            # The opt-in read mode: a session held in memory is shown unconfirmed for up to 100 ms.
            label = f"ModalStack pg 1× {STALE_READS}"
            rows += measure(bench, lambda: start_modalstack_pg(bench, postgres, 1, "normal", label,
                                                               ["--max-staleness-ms", "100"]),
                            "modalstack", ["read"], bench.sessions, label)
        else:
            log("this modalstack has no --database-url: the ModalStack PostgreSQL rows are left out")
        version = postgres.version
    finally:
        postgres.stop()
    log(f"PostgreSQL rows: {time.monotonic() - started:.0f} s")
    return rows, version


# ---------------------------------------------------------------------------------------------
# wrk

RUN_NUMBERS = iter(range(int(time.time()) * 1000, 1 << 62))


def usage(bench, pids, database):
    """CPU time so far, in seconds: of these processes, of the database server (None without one),
    of everything on the server's cores, and what the hypervisor stole from the machine's cores."""
    times = [cpu_seconds(pid) for pid in pids]
    return {"user": sum(user for user, _ in times), "system": sum(system for _, system in times),
            "database": database.cpu_seconds() if database else None,
            "busy": cpu_seconds_by_kind(bench.server_cpu_set)["busy"],
            "steal": cpu_seconds_by_kind(bench.all_cpus)["steal"]}


def usage_figures(before, after, seconds, requests):
    """The CPU figures of a run from usage() before and after it: the server's own split into user
    and system time (user_us, sys_us), and the database server's CPU counted in the total and shown
    apart too (db_us)."""
    database = None if before["database"] is None else after["database"] - before["database"]
    user = after["user"] - before["user"]
    system = after["system"] - before["system"]
    cpu = user + system + (database or 0.0)
    other = max(0.0, after["busy"] - before["busy"] - cpu)
    per_request = 1e6 / max(requests, 1)
    return {"cpu": cpu, "cpu_pct": 100 * cpu / seconds, "cpu_us": cpu * per_request,
            "user_us": user * per_request, "sys_us": system * per_request,
            "db_us": None if database is None else database * per_request,
            "other_pct": 100 * other / seconds, "steal_pct": 100 * (after["steal"] - before["steal"]) / seconds}


def run_wrk(bench, server, mode, kind, sessions, connections, duration, close=False):
    """One wrk per port of the server, each with its share of the connections and its own part of
    the sessions (so that two instances never write one session); their figures summed, the
    latencies the worse of the two."""
    for pid in server.pids:
        reset_peak(pid)
    before = usage(bench, server.pids, server.database)
    shares = len(server.ports)
    processes = []
    for index, port in enumerate(server.ports):
        argv = ["wrk", "-t", str(bench.wrk_threads), "-c", str(connections // shares), "-d", f"{duration}s",
                "--timeout", "5s", "-s", LUA]
        if close:
            argv += ["-H", "Connection: close"]
        argv += [f"http://127.0.0.1:{port}/", "--", mode, kind, str(sessions // shares), "10", str(next(RUN_NUMBERS)),
                 str(bench.write_offsets[index]), str(index * (sessions // shares))]
        if bench.wrk_cpus:
            argv = ["taskset", "-c", bench.wrk_cpus] + argv
        processes.append(PROCESSES.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    results = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=duration + 60)
            match = re.search(r"BENCH_RESULT (.*)", out.decode(errors="replace"))
            if not match:
                raise RuntimeError(f"wrk printed no result: {out.decode(errors='replace')} {err.decode(errors='replace')}")
            results.append({key: int(value) for key, value in (item.split("=") for item in match.group(1).split())})
    finally:
        for process in processes:
            PROCESSES.stop(process)
    after = usage(bench, server.pids, server.database)
    peak = sum(rss_kib(pid, "VmHWM") for pid in server.pids)
    # The next run goes on with the write sequence where this one stopped (every write it sent was
    # carried out), so that presents and dismisses keep alternating on every session.
    bench.write_offsets = [values["next_write"] for values in results]
    requests = sum(values["requests"] for values in results)
    seconds = max(values["duration_us"] for values in results) / 1e6
    errors = {key: sum(values[key] for values in results) for key in ("connect", "read", "write", "status", "timeout")}
    if sum(errors.values()):
        log(f"  {server.name} {mode}{' close' if close else ''} c{connections}: {sum(errors.values())} errors "
            f"(connect {errors['connect']}, read {errors['read']}, write {errors['write']}, "
            f"status>=400 {errors['status']}, timeout {errors['timeout']})")
    return {
        "requests": requests, "rps": sum(values["requests"] / (values["duration_us"] / 1e6) for values in results),
        "p50": max(values["p50_us"] for values in results) / 1000,
        "p99": max(values["p99_us"] for values in results) / 1000,
        "rss": peak / 1024, **usage_figures(before, after, seconds, requests),
        "bytes": sum(values["bytes"] for values in results) / max(requests, 1), "errors": sum(errors.values()),
    }


def file_bytes_written(pid):
    """What the process wrote through write(2) and its kin so far (wchar in /proc/PID/io): its
    files'. Sockets do not count: libmicrohttpd answers with send(2)."""
    with open(f"/proc/{pid}/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


def bytes_per_change(bench, main_database):
    """ModalStack normal's file writes per change (the WAL, and the checkpoints' copies into the
    database), over a write run at 64 connections on a fresh copy, with the access log off so that
    only the database's writes count. Each present and each dismiss is one change."""
    database = os.path.join(bench.tmp, "bytes.sqlite")
    shutil.copyfile(main_database, database)
    server = start_modalstack(bench, database, "normal", options=("--log-level", "off"))
    try:
        bench.write_offsets = [0]
        before = file_bytes_written(server.pids[0])
        run = run_wrk(bench, server, "write", "modalstack", bench.sessions, 64, bench.duration)
        written = file_bytes_written(server.pids[0]) - before
        reads_before = file_bytes_written(server.pids[0])
        run_wrk(bench, server, "read", "modalstack", bench.sessions, 64, 1)
        reads = file_bytes_written(server.pids[0]) - reads_before
    finally:
        server.stop()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(database + suffix):
                os.remove(database + suffix)
    return {"changes": run["requests"], "bytes": written / max(run["requests"], 1), "read_run_bytes": reads}


def median_of(runs):
    result = {key: None if runs[0][key] is None else statistics.median(run[key] for run in runs)
              for key in runs[0] if key != "errors"}
    result["errors"] = sum(run["errors"] for run in runs)
    return result


SCENARIOS = {
    # name: (wrk.lua mode, Connection: close, label)
    "read": ("read", False, "read"),
    "write": ("write", False, "write"),
    "mix": ("mix", False, "90/10 mix"),
    "read-close": ("read", True, "read, conn/request"),
    "health": ("health", False, "GET /livez"),
}


def log_row(row):
    log(f"  {row['target']:<24} {row['scenario']:<11} c{row['connections']:<4} {row['rps']:>9.0f} req/s  "
        f"p50 {row['p50']:.2f} ms  p99 {row['p99']:.2f} ms  RSS {row['rss']:.1f} MiB  CPU {row['cpu']:.2f} s  "
        f"steal {row['steal_pct']:.0f} %")


def measure(bench, start, kind, scenarios, sessions, label, connections=None, fresh=True):
    """Runs each scenario at each connection count, bench.repeats times. With `fresh`, each scenario
    gets a server just started by start() (so every scenario begins with the same sessions, whatever
    the writes of the one before left); otherwise one server serves them all in turn."""
    rows = []
    server = None
    try:
        for scenario in scenarios:
            if server is None or fresh:
                if server is not None:
                    server.stop()
                server = start()
                bench.write_offsets = [0] * len(server.ports)  # the sessions are as loaded: the sequence starts over
            mode, close, _ = SCENARIOS[scenario]
            if bench.warmup:
                run_wrk(bench, server, mode, kind, sessions, 64, bench.warmup, close)
            for count in connections or bench.connections:
                runs = [run_wrk(bench, server, mode, kind, sessions, count, bench.duration, close)
                        for _ in range(bench.repeats)]
                row = {"target": label, "scenario": scenario, "connections": count, **median_of(runs)}
                log_row(row)
                rows.append(row)
    finally:
        if server is not None:
            server.stop()
    return rows


# ---------------------------------------------------------------------------------------------
# Output

def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"nproc": os.cpu_count(), "model": model, "kernel": os.uname().release}


def versions(bench):
    def first_line(argv):
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (result.stdout or result.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    webdis = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "webdis"], capture_output=True, text=True).stdout
    mhd = subprocess.run(["pkg-config", "--modversion", "libmicrohttpd"], capture_output=True, text=True).stdout.strip()
    return {"wrk": first_line(["wrk", "-v"]).split(" [")[0], "redis": first_line(["redis-server", "--version"]).split(" sha")[0],
            "webdis": webdis or "?", "libmicrohttpd": mhd or "?"}


def filesystem_of(path):
    best, kind = "", "?"
    with open("/proc/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if path.startswith(fields[1]) and len(fields[1]) > len(best):
                best, kind = fields[1], f"{fields[2]} ({fields[0]})"
    return kind


def table(headers, rows, markdown, left=3):
    if markdown:
        lines = ["| " + " | ".join(headers) + " |",
                 "|" + "|".join("---" if index < left else "---:" for index in range(len(headers))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(headers[index]), *(len(row[index]) for row in rows)) for index in range(len(headers))]
    def line(cells):
        return "  ".join(cell.ljust(widths[i]) if i < left else cell.rjust(widths[i]) for i, cell in enumerate(cells))
    return "\n".join([line(headers), line(["-" * width for width in widths])] + [line(row) for row in rows])


def results_table(rows, markdown):
    def optional(value, form):
        return "-" if value is None else format(value, form)
    headers = ["target", "scenario", "conns", "req/s", "p50 ms", "p99 ms", "peak RSS MiB", "CPU s", "CPU %",
               "CPU µs/req", "user µs", "sys µs", "of it DB", "other %", "steal %", "errors", "B/resp"]
    cells = [[row["target"], SCENARIOS[row["scenario"]][2], str(row["connections"]), f"{row['rps']:.0f}",
              f"{row['p50']:.2f}", f"{row['p99']:.2f}", f"{row['rss']:.1f}", f"{row['cpu']:.2f}",
              f"{row['cpu_pct']:.0f}", f"{row['cpu_us']:.1f}", f"{row['user_us']:.1f}", f"{row['sys_us']:.1f}",
              optional(row["db_us"], ".1f"), f"{row['other_pct']:.0f}",
              f"{row['steal_pct']:.0f}", str(row["errors"]), optional(row["bytes"], ".0f")] for row in rows]
    return table(headers, cells, markdown)


def scaling_table(rows, markdown):
    headers = ["sessions", "DB MiB", "start-up s", "RSS ready MiB", "read req/s", "read p99 ms", "read peak RSS MiB",
               "write req/s", "write p99 ms", "write peak RSS MiB"]
    cells = [[f"{row['sessions']:,}", f"{row['db_mib']:.1f}", f"{row['startup']:.3f}", f"{row['rss_ready']:.1f}",
              f"{row['read']['rps']:.0f}", f"{row['read']['p99']:.2f}", f"{row['read']['rss']:.1f}",
              f"{row['write']['rps']:.0f}", f"{row['write']['p99']:.2f}", f"{row['write']['rss']:.1f}"]
             for row in rows]
    return table(headers, cells, markdown, left=0)


def ratios(rows, scaling, connections, naive_rate):
    def find(target, scenario, count):
        for row in rows:
            if row["target"] == target and row["scenario"] == scenario and row["connections"] == count:
                return row
        return None

    lines = []

    def ratio(title, numerator, denominator, goal, scenario, other_scenario=None):
        parts = []
        for count in connections:
            a, b = find(numerator, scenario, count), find(denominator, other_scenario or scenario, count)
            if a and b and b["rps"]:
                value = a["rps"] / b["rps"]
                mark = "" if goal is None else (" ok" if value >= goal else " SHORT")
                parts.append(f"c{count} {value:.2f}x{mark}")
        goal_text = f"(target >= {goal}x)" if goal is not None else "(no target)"
        lines.append(f"{title:<58} {goal_text:<17} " + ", ".join(parts))

    def latency(title, target, scenario, count, limit):
        row = find(target, scenario, count)
        if row:
            mark = "ok" if row["p99"] <= limit else "SHORT"
            lines.append(f"{title:<58} {'(target <= ' + str(limit) + ' ms)':<17} c{count} p99 {row['p99']:.2f} ms {mark}")

    normal, full, ceiling = "ModalStack normal", "ModalStack full", "ceiling (C MHD)"
    everysec, always = "webdis+redis everysec", "webdis+redis always"
    ratio("reads: ModalStack GET / ceiling", normal, ceiling, 0.8, "read")
    ratio("reads: ModalStack GET / webdis LRANGE", normal, everysec, 1.2, "read")
    latency("reads: ModalStack GET p99 at 64 connections", normal, "read", 64, 5)
    ratio("writes normal: present+dismiss / LPUSH+LPOP everysec", normal, everysec, 1.0, "write")
    latency("writes normal: present+dismiss p99 at 64 connections", normal, "write", 64, 10)
    ratio("writes full: present+dismiss / LPUSH+LPOP always", full, always, 1.0, "write")
    latency("writes full: present+dismiss p99 at 64 connections", full, "write", 64, 10)
    naive = []
    for count in connections:
        row = find(full, "write", count)
        if row and naive_rate:
            value = row["rps"] / naive_rate
            naive.append(f"c{count} {value:.2f}x {'ok' if value >= 10 else 'SHORT'}")
    lines.append(f"{'writes full: present+dismiss / naive one sync per request':<58} {'(target >= 10x)':<17} "
                 + ", ".join(naive) + f" (naive: {naive_rate:.0f} syncs/s)")
    ratio("90/10 mix normal / webdis everysec", normal, everysec, None, "mix")
    ratio("90/10 mix full / webdis always", full, always, None, "mix")
    ratio("floor: ModalStack GET /livez (no session) / ceiling", normal, ceiling, None, "health", "read")
    ratio("conn/request reads: ModalStack / ceiling", normal, ceiling, None, "read-close")
    ratio("conn/request reads: ModalStack / webdis", normal, everysec, None, "read-close")
    ratio("writes: full / normal", full, normal, None, "write")
    ratio("writes normal / ModalStack's own reads", normal, normal, None, "write", "read")
    ratio("webdis: writes always / everysec", always, everysec, None, "write")
    if any(row["target"].startswith("ModalStack pg") for row in rows):
        for instances in ("1×", "2×"):
            pg = f"ModalStack pg {instances}"
            # Issue 33's targets are for one instance; two share its core with the database.
            one = instances == "1×"
            ratio(f"pg {instances} reads: GET / naive SELECT", f"{pg} normal", "pg naive normal", None, "read")
            ratio(f"pg {instances} writes normal: present+dismiss / naive transaction", f"{pg} normal",
                  "pg naive normal", 1.5 if one else None, "write")
            ratio(f"pg {instances} writes full: present+dismiss / naive transaction", f"{pg} full", "pg naive full",
                  None, "write")
            ratio(f"pg {instances} reads / SQLite (ModalStack normal)", f"{pg} normal", normal, 0.5 if one else None,
                  "read")
            if one:
                pg_row, sqlite_row = find(f"{pg} normal", "read", 64), find(normal, "read", 64)
                if pg_row and sqlite_row and pg_row["db_us"] is not None:
                    instance_us = pg_row["cpu_us"] - pg_row["db_us"]
                    value = instance_us / sqlite_row["cpu_us"]
                    title = "pg 1× reads: instance CPU per read / SQLite mode's"
                    lines.append(f"{title:<58} {'(target <= 2x)':<17} c64 {value:.2f}x "
                                 f"{'ok' if value <= 2 else 'SHORT'} ({instance_us:.1f} / {sqlite_row['cpu_us']:.1f} µs)")
            ratio(f"pg {instances} writes normal / SQLite normal", f"{pg} normal", normal, None, "write")
            ratio(f"pg {instances} writes full / SQLite full", f"{pg} full", full, None, "write")
        ratio(f"pg 1× reads, --max-staleness-ms 100 / SQLite", f"ModalStack pg 1× {STALE_READS}", normal, None, "read")
    if scaling:
        largest = scaling[-1]
        mark = "ok" if largest["startup"] <= 1.0 else "SHORT"
        lines.append(f"{'start-up with ' + format(largest['sessions'], ',') + ' sessions (spawn to /readyz 200)':<58} "
                     f"{'(target <= 1 s)':<17} {largest['startup']:.3f} s {mark}")
        if len(scaling) > 1:
            first = scaling[0]
            lines.append(f"{'scaling: reads / writes at ' + format(largest['sessions'], ',') + ' vs ' + format(first['sessions'], ',') + ' sessions':<58} "
                         f"{'(no target)':<17} reads {largest['read']['rps'] / first['read']['rps']:.2f}x, "
                         f"writes {largest['write']['rps'] / first['write']['rps']:.2f}x")
    return lines


# ---------------------------------------------------------------------------------------------

def instructions_per_request(bench, database, mode, sessions):
    """ModalStack's user-space instructions per request in one scenario, counted by valgrind's
    callgrind: all of its threads, libmicrohttpd and SQLite included, the kernel not. Unlike
    requests/s, the count does not move with what the hypervisor or other work takes from the
    machine, so it shows what a change to the code did. Returns (instructions, of them libc's
    memset, the busiest functions with their inclusive instructions per request)."""
    out_path = os.path.join(bench.tmp, f"callgrind-{mode}.out")
    server = start_modalstack(bench, database, "normal",
                              wrapper=["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out_path}"])
    process = server.processes[0]
    try:
        # Sessions' rows are written back in waves, one every write-back age of
        # changes: writes warm up past two waves and are counted over four, so that the count
        # holds write-backs at their average rate (within a wave of it), as a long run does.
        least = {"write": (2 * WRITE_BACK_AGE, 4 * WRITE_BACK_AGE)}.get(mode, (1, 1))
        warmed = 0
        while warmed < least[0]:
            warmed += run_wrk(bench, server, mode, "modalstack", sessions, CALLGRIND_CONNECTIONS, 5)["requests"]
        subprocess.run(["callgrind_control", "--zero", str(process.pid)], check=True, capture_output=True)
        requests = 0
        while requests < least[1]:
            requests += run_wrk(bench, server, mode, "modalstack", sessions, CALLGRIND_CONNECTIONS, 8)["requests"]
        subprocess.run(["callgrind_control", "--dump", str(process.pid)], check=True, capture_output=True)
    finally:
        server.stop()
    dump = out_path + ".1"
    if bench.callgrind_out:
        os.makedirs(bench.callgrind_out, exist_ok=True)
        shutil.copyfile(dump, os.path.join(bench.callgrind_out, f"callgrind-{mode}.out"))
    with open(dump, errors="replace") as dump_file:
        total = next(int(line.split()[1]) for line in dump_file if line.startswith(("totals:", "summary:")))
    # Inclusive counts by function; libmicrohttpd zeroes each connection's 32 KiB pool per request
    # with `rep stosb`, which valgrind counts byte by byte: shown apart.
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                               capture_output=True, text=True, check=True).stdout
    functions = []
    for line in annotated.splitlines():
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+)", line)
        if match:
            functions.append((int(match.group(1).replace(",", "")) // max(requests, 1), match.group(2).split(":")[-1]))
    memset = max((count for count, name in functions if "memset" in name), default=0)
    swift_functions = [(count, name) for count, name in functions if name.startswith("$s")]
    names = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(n for _, n in swift_functions),
                           capture_output=True, text=True).stdout.splitlines()
    busiest, seen = [], set()
    for (count, _), name in zip(swift_functions, names):
        # Wrappers repeat the function they wrap; a function can also appear twice (its own lines
        # and the compiler's).
        if name.startswith(("partial apply for ", "protocol witness for ", "thunk for ", "@objc ")):
            continue
        name = name.removeprefix("specialized ")
        if name not in seen:
            seen.add(name)
            busiest.append((count, name))
    return total // max(requests, 1), memset, busiest


# The layers of a request, each the inclusive instructions of the functions named (the busiest
# demangled name holding each, closures included, as the compiler may inline the function into
# them), outermost first: a layer's own count leaves out the layers inside it.
# What is left of the total (libmicrohttpd, the dispatcher, sending the answer) is HTTP.
LAYERS = [
    ("endpoint", ("Router.respond(to:reply:)",)),
    ("rules", ("Session.applying(_:in:)",)),
    # A change renders the session once (SessionDocument), then its answer around it. A read
    # answers with the JSON the session cache keeps per version: it renders nothing.
    ("rendering", ("Responses.change(", "SessionDocument.init(")),
    ("commit", ("SQLiteSessionStore.commit(_:)",)),
]


def layer_split(total, memset, functions):
    """Instructions per request by layer, from callgrind's inclusive counts (see LAYERS)."""
    def inclusive(prefixes):
        return sum(max((count for count, name in functions if prefix in name), default=0) for prefix in prefixes)
    counts = {layer: inclusive(prefixes) for layer, prefixes in LAYERS}
    # rules and rendering run inside the endpoint's call; the commit on the committer, outside it.
    endpoint = max(0, counts["endpoint"] - counts["rules"] - counts["rendering"])
    http = max(0, total - memset - counts["endpoint"] - counts["commit"])
    return [("HTTP", http), ("endpoint", endpoint), ("rules", counts["rules"]),
            ("rendering", counts["rendering"]), ("commit", counts["commit"]), ("libc memset", memset)]


def scenario_databases(bench, name, sessions, modes=("read", "write")):
    """Yields (mode, path) for each of `modes`: each a fresh copy of one database of `sessions`."""
    database = os.path.join(bench.tmp, f"{name}.sqlite")
    make_database(bench, database, sessions)
    for mode in modes:
        copy = os.path.join(bench.tmp, f"{name}-{mode}.sqlite")
        shutil.copyfile(database, copy)
        yield mode, copy


def instruction_table(bench):
    labels = {"read": "GET session (session cache hit)", "health": "GET /livez", "write": "present + dismiss"}
    for mode, copy in scenario_databases(bench, "callgrind", CALLGRIND_SESSIONS, tuple(labels)):
        label = labels[mode]
        total, memset, busiest = instructions_per_request(bench, copy, mode, CALLGRIND_SESSIONS)
        print(f"\n{label}: {total:,} instructions per request, {total - memset:,} besides libc memset ({memset:,})")
        print("  by layer: " + ", ".join(f"{layer} {count:,}" for layer, count in layer_split(total, memset, busiest)))
        for count, name in busiest[:CALLGRIND_FUNCTIONS]:
            print(f"  {count:>9,}  {name[:110]}")


# --perf: what a sample's innermost frame was doing. A kernel sample by the work its call chain
# shows (perf cuts long chains, and TCP over loopback delivers to the receiver inside the
# sender's call: both count as TCP/IP); a user sample by the library of its innermost frame.
KERNEL_WORK = [
    ("kernel: file syncs", ("fdatasync", "fsync", "writepages")),
    ("kernel: file reads", ("pread", "filemap_read")),
    ("kernel: file writes", ("pwrite", "ext4_", "generic_perform_write", "blk_mq", "virtqueue")),
    ("kernel: epoll", ("epoll",)),
    ("kernel: wake-ups (futex, eventfd)", ("futex", "eventfd")),
    ("kernel: TCP/IP over loopback", ("tcp_", "ip_", "skb", "sock", "net_", "inet", "sendmsg", "recv")),
]


def sample_category(frames):
    """`frames`: (symbol, library) pairs of one perf sample, innermost first."""
    symbol, library = frames[0]
    if "kernel" in library:
        if symbol.startswith(("finish_task_switch", "__schedule")):
            return "kernel: switching threads"
        names = [name for name, _ in frames]
        return next((label for label, words in KERNEL_WORK if any(word in name for name in names for word in words)),
                    "kernel: other")
    if "libsqlite3" in library:
        return "SQLite"
    if "libmicrohttpd" in library:
        return "libmicrohttpd"
    if "libpq" in library:
        return "libpq"
    if "libswift" in library or "libdispatch" in library:
        return "Swift runtime and standard library"
    if "libc.so" in library:
        if re.match(r"_?_?(libc_)?(malloc|calloc|realloc|free|cfree|_int_|malloc_|unlink_chunk)", symbol):
            return "libc: malloc and free"
        if re.match(r"__(mem|str)", symbol):
            return "libc: memset, memmove, string functions"
        return "libc: other (locks, system call wrappers)"
    if os.path.basename(library) == "modalstack":
        return "ModalStack code"
    return "other"


def cpu_profile(bench, start, mode, sessions):
    """(shares of the samples by category, ModalStack's CPU µs per request, requests/s) for one
    scenario on the server `start` starts, sampled by perf; a database server's CPU is left out."""
    server = start()
    pid = server.processes[0].pid
    data = os.path.join(bench.tmp, f"perf-{mode}.data")
    recorder = None
    try:
        run_wrk(bench, server, mode, "modalstack", sessions, PERF_CONNECTIONS, 2)
        # Per core, not per process: following each of the server's threads would cost at every
        # switch between them, which is much of what a write does.
        cores = bench.server_cpus or ",".join(map(str, sorted(bench.all_cpus)))
        recorder = subprocess.Popen(["perf", "record", "-q", "-F", "999", "-g", "-C", cores, "-o", data],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = run_wrk(bench, server, mode, "modalstack", sessions, PERF_CONNECTIONS, 5)
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=60)
    finally:
        if recorder and recorder.poll() is None:
            recorder.kill()
        server.stop()
    script = subprocess.run(["perf", "script", "-i", data, "--pid", str(pid), "-F", "ip,sym,dso"],
                            capture_output=True, text=True, check=True).stdout
    counts = {}
    for sample in script.split("\n\n"):
        frames = []
        for line in sample.strip().splitlines():
            match = re.match(r"\s*[0-9a-f]+ (.+?)(?:\+0x[0-9a-f]+)? \((.*)\)$", line)
            if match:
                frames.append((match.group(1), match.group(2)))
        if frames:
            category = sample_category(frames)
            counts[category] = counts.get(category, 0) + 1
    total = max(sum(counts.values()), 1)
    instance_us = result["user_us"] + result["sys_us"]
    return {category: count / total for category, count in counts.items()}, instance_us, result["rps"]


def profile_table(bench):
    labels = {"read": "GET session", "write": "present + dismiss"}
    for mode, copy in scenario_databases(bench, "perf", PERF_SESSIONS):
        print_profile(labels[mode], *cpu_profile(bench, lambda: start_modalstack(bench, copy, "normal"), mode,
                                                 PERF_SESSIONS))
    if bench.no_postgres or not accepts_database_url(bench.binary):
        return
    postgres = Postgres(bench)
    try:
        postgres.start(bench, max_connections=PERF_CONNECTIONS + 100)
        load_postgres_sessions(bench, postgres)
        for mode in ("read", "write"):
            shares, cpu_us, rps = cpu_profile(bench, lambda: start_modalstack_pg(bench, postgres, 1, "normal"), mode,
                                              bench.sessions)
            print_profile(f"{labels[mode]} on PostgreSQL (the instance's CPU, not the database's)",
                          shares, cpu_us, rps)
    finally:
        postgres.stop()


def print_profile(label, shares, cpu_us, rps):
    print(f"\n{label}: {rps:,.0f} requests/s, {cpu_us:.1f} µs of ModalStack's CPU per request")
    for category, share in sorted(shares.items(), key=lambda item: -item[1]):
        print(f"  {100 * share:5.1f} %  {share * cpu_us:6.1f} µs  {category}")


class Bench:
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[5:]))
    parser.add_argument("--binary", required=True, help="the release modalstack binary")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="64 connections, 3 s runs, once, 1k sessions: under two minutes")
    modes.add_argument("--full", action="store_true", help="also the scaling row with 1M sessions")
    modes.add_argument("--callgrind", action="store_true",
                       help="instead: ModalStack's instructions per read and per write under valgrind's callgrind")
    modes.add_argument("--perf", action="store_true",
                       help="instead: where ModalStack's CPU goes per read and per write, kernel included, sampled by perf")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown to FILE")
    parser.add_argument("--duration", type=float, help="seconds per wrk run (default 5; 3 with --quick)")
    parser.add_argument("--repeats", type=int, help="runs per measurement, median reported (default 3; 1 with --quick)")
    parser.add_argument("--connections", help="comma-separated connection counts (default 16,64,256; 64 with --quick)")
    parser.add_argument("--sessions", type=int, help="sessions for the main scenarios (default 10000; 1000 with --quick)")
    parser.add_argument("--nice", type=int, help="niceness of the servers and wrk (default -10 as root, else 0): "
                        "keeps other work on the machine from skewing the figures")
    parser.add_argument("--tmpdir", help="where the databases and AOF files go (default: $TMPDIR or /tmp)")
    parser.add_argument("--no-postgres", action="store_true",
                        help="leave out the PostgreSQL rows (the naive bound over libpq, ModalStack on PostgreSQL)")
    parser.add_argument("--callgrind-out", metavar="DIR",
                        help="with --callgrind, keep callgrind's dumps in DIR (callgrind-MODE.out) for callgrind_annotate")
    arguments = parser.parse_args()

    bench_started = time.monotonic()
    # SIGINT too: a shell starts a background job with SIGINT ignored, and Python then keeps it so.
    signal.signal(signal.SIGINT, _terminate)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)

    bench = Bench()
    bench.binary = os.path.abspath(arguments.binary)
    bench.quick = arguments.quick
    bench.callgrind_out = arguments.callgrind_out and os.path.abspath(arguments.callgrind_out)
    bench.duration = arguments.duration or (3 if arguments.quick else 5)
    bench.duration = int(bench.duration) if float(bench.duration).is_integer() else bench.duration
    bench.repeats = arguments.repeats or (1 if arguments.quick else 3)
    bench.connections = [int(value) for value in (arguments.connections or ("64" if arguments.quick else "16,64,256")).split(",")]
    bench.sessions = arguments.sessions or (1000 if arguments.quick else 10000)
    bench.warmup = 0 if arguments.quick else 1
    if bench.sessions < 16 * max(bench.connections):
        log(f"warning: {bench.sessions} sessions for {max(bench.connections)} connections: a dismiss may overtake "
            f"its present (409s); use at least {16 * max(bench.connections)}")
    scaling_sizes = [] if arguments.quick else [1000, 10000, 100000] + ([1000000] if arguments.full else [])

    cpus = sorted(os.sched_getaffinity(0))
    bench.all_cpus = set(cpus)
    global NICE
    NICE = arguments.nice if arguments.nice is not None else (-10 if os.geteuid() == 0 else 0)
    if len(cpus) >= 2:
        half = len(cpus) // 2
        bench.server_cpu_set = set(cpus[:half])
        bench.server_cpus = ",".join(map(str, cpus[:half]))
        bench.wrk_cpus = ",".join(map(str, cpus[half:]))
        bench.wrk_threads = 1  # wrk.lua's write sequence is per wrk thread: one thread (enough on loopback)
        pinning = f"server on core(s) {bench.server_cpus}, wrk -t{bench.wrk_threads} on core(s) {bench.wrk_cpus} (taskset), one {len(cpus)}-core machine"
    else:
        bench.server_cpus = bench.wrk_cpus = None
        bench.server_cpu_set = set(cpus)
        bench.wrk_threads = 1
        pinning = "one core: server and wrk share it (no pinning)"

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 65536)), hard))

    bench.tmp = tempfile.mkdtemp(prefix="modalstack-bench-", dir=arguments.tmpdir)
    try:
        info, tools = machine(), versions(bench)
        with open("/proc/loadavg") as loadavg:
            load_before = " ".join(loadavg.read().split()[:3])
        filesystem = filesystem_of(os.path.realpath(bench.tmp))
        log(f"{info['nproc']} x {info['model']}, Linux {info['kernel']}; {pinning}")
        log(f"temporary files in {bench.tmp} on {filesystem}")

        # A copy: a build running meanwhile (others share the scratch path) cannot swap it mid-run.
        bench.binary = os.path.join(bench.tmp, "modalstack")
        if arguments.callgrind:
            # Without its DWARF: valgrind 3.19 gives up on the toolchain's DWARF 5 ("possibly
            # corrupted debuginfo file"); the symbol table, which names the functions, stays.
            subprocess.run(["strip", "--strip-debug", "-o", bench.binary, arguments.binary], check=True)
        else:
            shutil.copy2(arguments.binary, bench.binary)
        bench.ceiling = os.path.join(bench.tmp, "ceiling")
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libmicrohttpd"], capture_output=True, text=True,
                               check=True).stdout.split()
        subprocess.run(["gcc", "-O2", "-o", bench.ceiling, CEILING_SOURCE] + flags, check=True)
        if not arguments.no_postgres and not arguments.callgrind and not arguments.perf:
            bench.pg_naive = os.path.join(bench.tmp, "pg-naive")
            subprocess.run(["gcc", "-O2", "-pthread", "-o", bench.pg_naive, PG_NAIVE_SOURCE,
                            "-I/usr/include/postgresql", "-lpq"], check=True)

        bench.write_offsets = [0]
        bench.template, bench.presentation = make_template(bench)
        if arguments.callgrind:
            instruction_table(bench)
            return
        if arguments.perf:
            bench.no_postgres = arguments.no_postgres
            profile_table(bench)
            return
        element = json.dumps(bench.presentation, separators=(",", ":"))
        main_database = os.path.join(bench.tmp, "main.sqlite")
        make_database(bench, main_database, bench.sessions)

        rows = []
        log(f"{bench.duration} s runs x {bench.repeats}, connections {bench.connections}, {bench.sessions} sessions; "
            f"each scenario on a freshly started server")
        rows += measure(bench, lambda: start_ceiling(bench), "fixed", ["read", "read-close"], bench.sessions,
                        "ceiling (C MHD)")

        for fsync, scenarios in (("everysec", ["read", "write", "mix", "read-close"]), ("always", ["write", "mix"])):
            rows += measure(bench, lambda: start_peer(bench, fsync, bench.sessions, element), "webdis", scenarios,
                            bench.sessions, f"webdis+redis {fsync}")

        bench.naive_rate = naive_sync_rate(bench)
        log(f"naive one sync per request: {bench.naive_rate:.0f} appends with fdatasync per second")

        startups = {}
        for durability in ("normal", "full"):
            def start():
                database = os.path.join(bench.tmp, f"run-{durability}.sqlite")
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(database + suffix):
                        os.remove(database + suffix)
                shutil.copyfile(main_database, database)
                server = start_modalstack(bench, database, durability)
                status, body = http(server.port, "GET", f"/v1/sessions/bench-{bench.sessions - 1}")
                if status != 200 or b'"profile"' not in body:
                    raise RuntimeError(f"a loaded session reads {status} {body[:300]!r}")
                startups.setdefault(durability, (server.startup, rss_kib(server.pids[0]) / 1024))
                log(f"{server.name}: ready in {server.startup:.3f} s with {bench.sessions} sessions")
                return server
            if durability == "normal":
                scenarios = ["read", "health", "write", "mix", "read-close"]
            elif bench.quick:
                scenarios = ["write", "mix"]  # reads do not depend on the durability
            else:
                scenarios = ["read", "write", "mix", "read-close"]  # health: no SQLite, as in normal
            rows += measure(bench, start, "modalstack", scenarios, bench.sessions, f"ModalStack {durability}")

        written = bytes_per_change(bench, main_database)
        log(f"ModalStack normal writes {written['bytes']:.0f} B to its files per change "
            f"({written['changes']} changes; a read run wrote {written['read_run_bytes']} B)")

        postgres_version = None
        if not arguments.no_postgres:
            postgres_rows, postgres_version = measure_postgres(bench)
            rows += postgres_rows

        scaling = []
        if bench.quick:
            read = next(row for row in rows if row["target"] == "ModalStack normal" and row["scenario"] == "read")
            write = next(row for row in rows if row["target"] == "ModalStack normal" and row["scenario"] == "write")
            scaling.append({"sessions": bench.sessions, "db_mib": os.path.getsize(main_database) / 2**20,
                            "startup": startups["normal"][0], "rss_ready": startups["normal"][1], "read": read, "write": write})
        for size in scaling_sizes:
            database = os.path.join(bench.tmp, f"scale-{size}.sqlite")
            make_database(bench, database, size)
            db_mib = os.path.getsize(database) / 2**20
            ready = {}

            def start():
                server = start_modalstack(bench, database, "normal")
                ready.update(startup=server.startup, rss_ready=rss_kib(server.pids[0]) / 1024)
                log(f"scaling: {size} sessions, ready in {server.startup:.3f} s, RSS {ready['rss_ready']:.1f} MiB")
                return server
            # Reads first, then writes, on one server: the reads change nothing.
            read, write = measure(bench, start, "modalstack", ["read", "write"], size, f"scaling {size}",
                                  connections=[64], fresh=False)
            scaling.append({"sessions": size, "db_mib": db_mib, "startup": ready["startup"],
                            "rss_ready": ready["rss_ready"], "read": read, "write": write})
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(database + suffix):
                    os.remove(database + suffix)

        with open("/proc/loadavg") as loadavg:
            load_after = " ".join(loadavg.read().split()[:3])
        when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        mode = "--quick" if bench.quick else ("--full" if arguments.full else "default")
        header = [
            f"ModalStack benchmark, {when}, mode {mode}: {bench.duration} s per run, median of {bench.repeats}, "
            f"connections {', '.join(map(str, bench.connections))}, {bench.sessions:,} sessions, keep-alive unless 'conn/request'",
            f"machine: {info['nproc']} x {info['model']}, Linux {info['kernel']}; {pinning}; "
            f"servers and wrk at nice {NICE}; load average before the run {load_before}",
            f"loopback; databases and AOF on {filesystem}; {tools['wrk']}, {tools['redis']}, webdis {tools['webdis']}, "
            f"libmicrohttpd {tools['libmicrohttpd']}",
            f"ModalStack with its defaults but --host/--port/--db/--durability/--threads {SERVER_THREADS} "
            f"(its access log on stdout goes to /dev/null); load average after the run {load_after}",
        ]
        if postgres_version:
            header.append(
                f"{postgres_version} on the server's cores, data on {filesystem}, fsync and full_page_writes on, "
                f"synchronous_commit per connection (normal off, full on); clients over TCP 127.0.0.1; "
                f"ModalStack pg: --database-url, --threads {PG_SERVER_THREADS}, its default pool; "
                f"CPU of every postgres process counted")
        ratio_lines = ratios(rows, scaling, bench.connections, bench.naive_rate)
        print()
        print("\n".join(header))
        print()
        print(results_table(rows, markdown=False))
        print()
        print("Scaling (ModalStack normal, 64 connections; start-up = spawn until /readyz answers 200)")
        print(scaling_table(scaling, markdown=False))
        print()
        print("Ratios (requests/s of the first over the second, same connection count)")
        print("\n".join(ratio_lines))
        print()
        print(f"Written per change (ModalStack normal, write, 64 connections, access log off; /proc/PID/io wchar): "
              f"{written['bytes']:.0f} B")
        print()
        print(f"total {time.monotonic() - bench_started:.0f} s")

        if arguments.markdown:
            method = "\n".join(line for line in __doc__.split("Method\n------\n", 1)[1].splitlines())
            with open(arguments.markdown, "w") as markdown:
                markdown.write(f"## Benchmark ({when})\n\n")
                markdown.write("\n".join(f"- {line}" for line in header) + "\n\n")
                markdown.write(results_table(rows, markdown=True) + "\n\n")
                markdown.write("Scaling (ModalStack normal, 64 connections; start-up = spawn until `/readyz` answers 200):\n\n")
                markdown.write(scaling_table(scaling, markdown=True) + "\n\n")
                markdown.write("Ratios (requests/s of the first over the second, same connection count):\n\n```\n")
                markdown.write("\n".join(ratio_lines) + "\n```\n\n")
                markdown.write(f"Written per change (ModalStack normal, write, 64 connections, access log off; "
                               f"`/proc/PID/io` wchar): {written['bytes']:.0f} B\n\n")
                markdown.write("### Method\n\n" + method.strip() + "\n")
            log(f"Markdown written to {arguments.markdown}")
    finally:
        PROCESSES.stop_all()
        shutil.rmtree(bench.tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted; every process started was stopped and the temporary files removed")
        sys.exit(130)
    except SystemExit as exit:
        if exit.code not in (None, 0):
            log(f"stopped (status {exit.code}); every process started was stopped and the temporary files removed")
        raise
