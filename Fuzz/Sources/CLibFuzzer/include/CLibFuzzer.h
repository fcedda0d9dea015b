#ifndef NEXTPAGE_CLIBFUZZER_H
#define NEXTPAGE_CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif
