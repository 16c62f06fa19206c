#ifndef MODALSTACK_CLIBPQ_SHIM_H
#define MODALSTACK_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
