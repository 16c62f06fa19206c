/*
 * The benchmark's ceiling: the least an HTTP server on libmicrohttpd can do, with the daemon
 * configured exactly as ModalStack configures it (see Sources/ModalStackHTTP/HTTPServer.swift):
 *
 *   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC,
 *   a thread pool of --threads workers (ModalStack's default: 2), a connection limit of 1024,
 *   a connection timeout of 30 s, its own non-blocking listen socket with a backlog of 511.
 *
 * Every request, whatever its method and path, is answered 200 with the same ~300-byte JSON body
 * (shaped like a session with one presentation). The response is queued on the handler's final
 * call, as ModalStack does, so that keep-alive works; request bodies are read and dropped.
 *
 *   gcc -O2 -o ceiling scripts/ceiling/ceiling.c $(pkg-config --cflags --libs libmicrohttpd)
 *   ./ceiling [PORT [THREADS]]        PORT 0 (the default) picks a free one
 *
 * Prints "ceiling: listening on 127.0.0.1:PORT" on stderr once it accepts connections, like
 * ModalStack, and stops cleanly on SIGINT or SIGTERM. Used by scripts/bench; not part of the service.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char BODY[] =
    "{\"id\":\"bench-1\",\"version\":1,\"createdAt\":\"2025-01-01T00:00:00.000Z\","
    "\"updatedAt\":\"2025-01-01T00:00:00.000Z\",\"stack\":[{\"id\":\"AAAAAAAAAAAAAAAAAAAAAAAA\","
    "\"destination\":\"profile\",\"style\":\"sheet\",\"key\":\"profile\",\"state\":\"presented\","
    "\"locked\":false,\"payload\":{\"user\":\"bench\"},\"detents\":[],\"interactiveDismissDisabled\":false}],"
    "\"top\":null,\"queue\":[]}";

static struct MHD_Response *response;
static int marker;

static enum MHD_Result handle(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*con_cls == NULL) {            /* headers are in: answer later, or keep-alive is lost */
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {      /* a body chunk: consume it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(connection, MHD_HTTP_OK, response);
}

int main(int argc, char **argv) {
    unsigned port = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
    unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2;

    int listen_socket = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); /* as ModalStack's */
    int one = 1;
    setsockopt(listen_socket, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listen_socket < 0 || bind(listen_socket, (struct sockaddr *)&address, sizeof address) != 0
        || listen(listen_socket, 511) != 0) {
        perror("ceiling: cannot listen");
        return 1;
    }
    socklen_t length = sizeof address;
    getsockname(listen_socket, (struct sockaddr *)&address, &length);

    response = MHD_create_response_from_buffer(sizeof BODY - 1, (void *)BODY, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, NULL); /* the daemon's threads inherit the mask */

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_socket,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "ceiling: libmicrohttpd could not start\n");
        return 1;
    }
    fprintf(stderr, "ceiling: listening on 127.0.0.1:%u, threads %u\n", (unsigned)ntohs(address.sin_port), threads);
    fflush(stderr);

    int received;
    sigwait(&signals, &received);
    MHD_stop_daemon(daemon);
    close(listen_socket);
    MHD_destroy_response(response);
    return 0;
}
