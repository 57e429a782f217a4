/* A small MLP classifier (inputs -> hidden (tanh) -> classes, softmax
 * cross-entropy) with hand-written backpropagation over ONE flat float
 * vector of parameters, so fault-tolerant algorithms can average, snapshot
 * and heal the model as a plain array. Deterministic: the same parameters
 * and batch give the same bits on every replica. */
#ifndef FTC_EXAMPLES_MLP_H
#define FTC_EXAMPLES_MLP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mlp_shape {
    int inputs;
    int hidden;
    int classes;
} mlp_shape;

/* Number of floats in the parameter vector: W1, b1, W2, b2. */
size_t mlp_param_count(mlp_shape s);

/* Scratch floats mlp_loss_grad needs for a batch of this size. */
size_t mlp_scratch_count(mlp_shape s, int batch);

/* Fills params with scaled normal weights and zero biases from seed. */
void mlp_init(mlp_shape s, float *params, uint64_t seed);

/* Mean cross-entropy of the batch (x: batch x inputs, y: labels). When grad
 * is not NULL, writes d(loss)/d(params) into it (overwriting). *correct
 * (may be NULL) gets how many predictions were right. */
float mlp_loss_grad(mlp_shape s, const float *params, const float *x,
                    const int *y, int batch, float *grad, float *scratch,
                    int *correct);

#endif
