#ifndef MODALSTACK_CSQLITE_SHIM_H
#define MODALSTACK_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
