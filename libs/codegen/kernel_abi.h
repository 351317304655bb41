#pragma once

/* The C ABI between sparsetune and every kernel it generates. The same text is compiled into
   the host and pasted into each generated source, so both sides always agree. */

#include <stdint.h>

#define SPARSETUNE_KERNEL_ABI                                                                  \
  typedef struct st_level {                                                                    \
    int64_t extent;      /* coordinates of this level */                                       \
    int64_t positions;   /* positions of this level */                                         \
    const int32_t* pos;  /* C levels: parent positions + 1 entries */                          \
    const void* crd;     /* C levels: one coordinate per position, of the kernel's width */    \
    const int32_t* base; /* C levels with relative coordinates: one per parent position */     \
  } st_level;                                                                                  \
  typedef struct st_args {                                                                     \
    int64_t dims[16];          /* per index, in the expression's index order */                \
    int64_t splits[16];        /* per index; 1 when unsplit */                                 \
    st_level levels[16];       /* levels of the sparse operand */                              \
    const void* sparse_values; /* values of the sparse operand */                              \
    const void* inputs[16];    /* dense inputs by tensor id (0 is the output) */               \
    void* output;              /* dense output, or the values of a sparse output */            \
    int64_t chunk;             /* OpenMP dynamic chunk */                                      \
    int64_t threads;           /* 0: all hardware threads */                                   \
    /* per index: the original number of each renumbered row or column of a reordered sparse   \
       operand (null: not renumbered); dense operands and the output are permuted on entry and \
       exit unless tuned_order is nonzero (then they are given in the renumbered order) */     \
    const int32_t* old_of_new[16];                                                             \
    /* per index: the inverse, each original row's or column's renumbered number */            \
    const int32_t* new_of_old[16];                                                             \
    int64_t tuned_order;                                                                       \
  } st_args;

#define SPARSETUNE_KERNEL_ENTRY "sparsetune_kernel"
#define SPARSETUNE_MAX_INDICES 16
#define SPARSETUNE_MAX_TENSORS 16
#define SPARSETUNE_MAX_LEVELS 16

#ifdef __cplusplus
extern "C" {
#endif
SPARSETUNE_KERNEL_ABI
typedef int (*st_kernel_fn)(const st_args*);
#ifdef __cplusplus
}
#endif

#define SPARSETUNE_STRINGIFY_(x) #x
#define SPARSETUNE_STRINGIFY(x) SPARSETUNE_STRINGIFY_(x)
#define SPARSETUNE_KERNEL_ABI_TEXT SPARSETUNE_STRINGIFY(SPARSETUNE_KERNEL_ABI)
