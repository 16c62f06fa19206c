/*
 * The benchmark's bound for ModalStack's PostgreSQL engine: a naive server's database work and
 * nothing else (no HTTP, no JSON, no rules), one transaction per request over libpq, each client
 * thread on a connection of its own. It is to the PostgreSQL rows what ceiling.c is to HTTP.
 *
 *   gcc -O2 -pthread -o pg-naive scripts/ceiling/pg-naive.c -I/usr/include/postgresql -lpq
 *   ./pg-naive URL read|write THREADS SECONDS SESSIONS on|off
 *
 * URL     the database (a postgresql:// URL or a libpq connection string)
 * read    per request, a primary-key SELECT of one session row, at random
 * write   per request, one transaction: BEGIN; an upsert of a session row with a ~1 KB stack;
 *         an insert of a ~0.5 KB change row; COMMIT. That is what ModalStack's store does for a
 *         present or a dismiss, less what it prunes; each thread writes its own sessions in turn.
 * on|off  synchronous_commit for every connection, as ModalStack sets it (full: on, normal: off)
 *
 * The tables have the shape of ModalStack's sessions and changes, indexes included
 * (Sources/ModalStackPostgres/PostgresSchema.swift); they are created and loaded with SESSIONS
 * sessions "bench-0" … when missing. Then the program connects every thread, prints "ready",
 * and waits for a line on stdin; runs for SECONDS; prints one line
 *   BENCH_RESULT requests=N duration_us=N p50_us=N p99_us=N errors=N
 * and waits for stdin to close before it disconnects. So the driver (scripts/bench-lib/bench.py)
 * measures the CPU of this program and of the database between the two lines, without the
 * connecting and disconnecting. Used by scripts/bench; not part of the service.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS sessions (id text COLLATE \"C\" PRIMARY KEY, version bigint NOT NULL,"
    " created_at bigint NOT NULL, updated_at bigint NOT NULL, stack text NOT NULL, queue text NOT NULL,"
    " ttl bigint NOT NULL, expires_at bigint NOT NULL);"
    "CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at);"
    "CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC, id DESC);"
    "CREATE TABLE IF NOT EXISTS changes (session_id text COLLATE \"C\" NOT NULL, version bigint NOT NULL,"
    " record text NOT NULL, PRIMARY KEY (session_id, version));";

/* $1 sessions, $2 a stack: the rows a write then updates. */
static const char LOAD[] =
    "INSERT INTO sessions SELECT 'bench-' || n, 1, 0, 0, $2, '[]', 86400, 86400000 "
    "FROM generate_series(0, $1::int - 1) AS n ON CONFLICT (id) DO NOTHING";

static const char READ[] =
    "SELECT id, version, created_at, updated_at, stack, queue, ttl FROM sessions WHERE id = $1";

/* $1 id, $2 now (ms), $3 stack, $4 expires at (ms). */
static const char UPSERT[] =
    "INSERT INTO sessions (id, version, created_at, updated_at, stack, queue, ttl, expires_at) "
    "VALUES ($1, 1, $2, $2, $3, '[]', 86400, $4) "
    "ON CONFLICT (id) DO UPDATE SET version = sessions.version + 1, updated_at = excluded.updated_at, "
    "stack = excluded.stack, queue = excluded.queue, ttl = excluded.ttl, expires_at = excluded.expires_at "
    "RETURNING version";

static const char INSERT_CHANGE[] = "INSERT INTO changes (session_id, version, record) VALUES ($1, $2, $3)";

enum { STACK_BYTES = 1024, RECORD_BYTES = 512 };

static const char *mode;
static int thread_count, sessions;
static atomic_bool stopping;
static pthread_barrier_t starting; /* every thread created before the clock starts */

struct client {
    PGconn *connection;
    int index;
    unsigned seed; /* rand_r's, for the reads */
    long requests, errors;
    unsigned *latencies_us; /* one per request */
    long capacity;
};

static long now_us(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec * 1000000L + time.tv_nsec / 1000;
}

/* Runs one statement; returns whether it succeeded, copying its first value into `value`. */
static int run(PGconn *connection, const char *sql, int count, const char *const *parameters, char *value,
               size_t size) {
    PGresult *result = PQexecParams(connection, sql, count, NULL, parameters, NULL, NULL, 0);
    ExecStatusType status = PQresultStatus(result);
    int ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    if (ok && value && PQntuples(result) > 0)
        snprintf(value, size, "%s", PQgetvalue(result, 0, 0));
    if (!ok)
        fprintf(stderr, "pg-naive: %s", PQerrorMessage(connection));
    PQclear(result);
    return ok;
}

/* A JSON-like text of `bytes` bytes that names the request, so that every write changes the row. */
static void filler(char *text, size_t bytes, const char *id, long request) {
    int length = snprintf(text, bytes, "[{\"id\":\"%s\",\"request\":%ld,\"payload\":\"", id, request);
    memset(text + length, 'x', bytes - length - 4);
    strcpy(text + bytes - 4, "\"}]");
}

static int request(struct client *client, long number) {
    char id[32], now[24], expires[24], version[24] = "", stack[STACK_BYTES], record[RECORD_BYTES];
    if (strcmp(mode, "read") == 0) {
        snprintf(id, sizeof id, "bench-%d", rand_r(&client->seed) % sessions);
        const char *parameters[] = {id};
        return run(client->connection, READ, 1, parameters, NULL, 0);
    }
    /* Thread t writes sessions t, t + THREADS, …: no two transactions wait for one row. */
    snprintf(id, sizeof id, "bench-%ld", (client->index + number * thread_count) % sessions);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    long milliseconds = wall.tv_sec * 1000L + wall.tv_nsec / 1000000;
    snprintf(now, sizeof now, "%ld", milliseconds);
    snprintf(expires, sizeof expires, "%ld", milliseconds + 86400000L);
    filler(stack, sizeof stack, id, number);
    filler(record, sizeof record, id, number);
    const char *upsert[] = {id, now, stack, expires};
    if (!run(client->connection, "BEGIN", 0, NULL, NULL, 0))
        return 0;
    int ok = run(client->connection, UPSERT, 4, upsert, version, sizeof version);
    const char *change[] = {id, version, record};
    ok = ok && run(client->connection, INSERT_CHANGE, 3, change, NULL, 0);
    ok = ok && run(client->connection, "COMMIT", 0, NULL, NULL, 0);
    if (!ok)
        run(client->connection, "ROLLBACK", 0, NULL, NULL, 0);
    return ok;
}

static void *serve(void *argument) {
    struct client *client = argument;
    pthread_barrier_wait(&starting);
    for (long number = 0; !atomic_load(&stopping); number++) {
        long started = now_us();
        if (!request(client, number)) {
            client->errors++;
            continue;
        }
        if (client->requests == client->capacity) {
            client->capacity = client->capacity ? client->capacity * 2 : 65536;
            client->latencies_us = realloc(client->latencies_us, client->capacity * sizeof *client->latencies_us);
        }
        client->latencies_us[client->requests++] = (unsigned)(now_us() - started);
    }
    return NULL;
}

static int ascending(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

static PGconn *connect_to(const char *url, const char *synchronous_commit) {
    PGconn *connection = PQconnectdb(url);
    if (PQstatus(connection) != CONNECTION_OK) {
        fprintf(stderr, "pg-naive: cannot connect: %s", PQerrorMessage(connection));
        exit(1);
    }
    char setting[64];
    snprintf(setting, sizeof setting, "SET synchronous_commit = %s", synchronous_commit);
    if (!run(connection, setting, 0, NULL, NULL, 0))
        exit(1);
    return connection;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: pg-naive URL read|write THREADS SECONDS SESSIONS on|off\n");
        return 2;
    }
    const char *url = argv[1];
    mode = argv[2];
    thread_count = atoi(argv[3]);
    double seconds = atof(argv[4]);
    sessions = atoi(argv[5]);

    struct client *clients = calloc(thread_count, sizeof *clients);
    for (int index = 0; index < thread_count; index++) {
        clients[index].connection = connect_to(url, argv[6]);
        clients[index].index = index;
        clients[index].seed = (unsigned)(index + 1);
    }
    char count[16], stack[STACK_BYTES];
    snprintf(count, sizeof count, "%d", sessions);
    filler(stack, sizeof stack, "bench", 0);
    const char *load[] = {count, stack};
    PGresult *schema = PQexec(clients[0].connection, SCHEMA); /* several statements: not PQexecParams */
    if (PQresultStatus(schema) != PGRES_COMMAND_OK) {
        fprintf(stderr, "pg-naive: %s", PQerrorMessage(clients[0].connection));
        return 1;
    }
    PQclear(schema);
    if (!run(clients[0].connection, LOAD, 2, load, NULL, 0))
        return 1;

    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 1;

    pthread_t threads[thread_count];
    pthread_barrier_init(&starting, NULL, thread_count + 1);
    for (int index = 0; index < thread_count; index++)
        pthread_create(&threads[index], NULL, serve, &clients[index]);
    pthread_barrier_wait(&starting);
    long started = now_us();
    usleep((useconds_t)(seconds * 1e6));
    atomic_store(&stopping, 1);
    long requests = 0, errors = 0;
    for (int index = 0; index < thread_count; index++) {
        pthread_join(threads[index], NULL);
        requests += clients[index].requests;
        errors += clients[index].errors;
    }
    long duration = now_us() - started;

    unsigned *latencies = malloc((requests ? requests : 1) * sizeof *latencies);
    long filled = 0;
    for (int index = 0; index < thread_count; index++) {
        memcpy(latencies + filled, clients[index].latencies_us, clients[index].requests * sizeof *latencies);
        filled += clients[index].requests;
    }
    qsort(latencies, requests, sizeof *latencies, ascending);
    printf("BENCH_RESULT requests=%ld duration_us=%ld p50_us=%u p99_us=%u errors=%ld\n", requests, duration,
           requests ? latencies[requests / 2] : 0, requests ? latencies[requests * 99 / 100] : 0, errors);
    fflush(stdout);

    while (fgets(line, sizeof line, stdin)) /* until the driver has read its CPU figures */
        ;
    for (int index = 0; index < thread_count; index++)
        PQfinish(clients[index].connection);
    return 0;
}
