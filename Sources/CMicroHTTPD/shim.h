#ifndef MODALSTACK_CMICROHTTPD_SHIM_H
#define MODALSTACK_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <microhttpd.h>

// Variadic libmicrohttpd functions do not import into Swift: these wrappers fix their arguments.

// Leaves the URL and query arguments percent-encoded. libmicrohttpd 0.9.75 otherwise decodes the URL
// passed to the access handler ("%2F" becomes "/", "%00" truncates it), so path segments could not be
// told apart from encoded slashes. '+' in query arguments is still turned into a space by the library.
static inline size_t modalstack_mhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *s) {
  (void)cls;
  (void)connection;
  return strlen(s);
}

// The callback of MHD_OPTION_URI_LOG_CALLBACK: its result becomes the request's `*con_cls`.
typedef void *(*modalstack_mhd_uri_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

// Starts a daemon with the accept policy, the URI, completion and connection callbacks (all given
// `cls`), the raw-URL unescaper and the options in `options` (terminated by an MHD_OPTION_END item).
static inline struct MHD_Daemon *modalstack_mhd_start_daemon(unsigned int flags,
                                                             void *cls,
                                                             MHD_AcceptPolicyCallback accept_policy,
                                                             MHD_AccessHandlerCallback handler,
                                                             modalstack_mhd_uri_callback uri_received,
                                                             MHD_RequestCompletedCallback completed,
                                                             MHD_NotifyConnectionCallback connection_notified,
                                                             struct MHD_OptionItem *options) {
  return MHD_start_daemon(flags, 0, accept_policy, cls, handler, cls,
                          MHD_OPTION_URI_LOG_CALLBACK, uri_received, cls,
                          MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                          MHD_OPTION_NOTIFY_CONNECTION, connection_notified, cls,
                          MHD_OPTION_UNESCAPE_CALLBACK, modalstack_mhd_keep_escaped, NULL,
                          MHD_OPTION_ARRAY, options,
                          MHD_OPTION_END);
}

// The port of the daemon's listen socket (the real one when 0 was asked for), or 0.
static inline uint16_t modalstack_mhd_bind_port(struct MHD_Daemon *daemon) {
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info == NULL ? 0 : info->port;
}

// The peer address of a connection, or NULL.
static inline const struct sockaddr *modalstack_mhd_client_address(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  return info == NULL ? NULL : info->client_addr;
}

// The socket of a connection, or -1.
static inline int modalstack_mhd_connection_socket(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  return info == NULL ? -1 : info->connect_fd;
}

// The pointer the connection-notify callback stored for a connection, or NULL.
static inline void *modalstack_mhd_socket_context(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info == NULL ? NULL : info->socket_context;
}

#endif
