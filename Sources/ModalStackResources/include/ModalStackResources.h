#ifndef MODALSTACK_RESOURCES_H
#define MODALSTACK_RESOURCES_H

#include <stddef.h>

/// A file compiled into the binary: its bytes and their count.
typedef struct {
    const unsigned char *_Nonnull bytes;
    size_t count;
} EmbeddedFile;

/// The repository's openapi.yaml, served at `GET /openapi.yaml`.
EmbeddedFile modalstack_openapi_yaml(void);
/// The inspector's page, script and style sheet.
EmbeddedFile modalstack_inspector_html(void);
EmbeddedFile modalstack_inspector_js(void);
EmbeddedFile modalstack_inspector_css(void);

#endif
