// The files the server serves, compiled in with C23's #embed: the C compiler reads half a
// megabyte in milliseconds, where SwiftPM's `.embedInCode` turns it into a Swift array literal
// that takes the Swift compiler minutes in every build. The compiler's dependency file lists
// each embedded file, so editing one rebuilds this.
#include "ModalStackResources.h"

#pragma clang diagnostic ignored "-Wc23-extensions"

static const unsigned char openapi_yaml[] = {
#embed "../../openapi.yaml"
};
static const unsigned char inspector_html[] = {
#embed "inspector/inspector.html"
};
static const unsigned char inspector_js[] = {
#embed "inspector/inspector.js"
};
static const unsigned char inspector_css[] = {
#embed "inspector/inspector.css"
};

EmbeddedFile modalstack_openapi_yaml(void) { return (EmbeddedFile){openapi_yaml, sizeof openapi_yaml}; }
EmbeddedFile modalstack_inspector_html(void) { return (EmbeddedFile){inspector_html, sizeof inspector_html}; }
EmbeddedFile modalstack_inspector_js(void) { return (EmbeddedFile){inspector_js, sizeof inspector_js}; }
EmbeddedFile modalstack_inspector_css(void) { return (EmbeddedFile){inspector_css, sizeof inspector_css}; }
