"""Train a small model in PyTorch with tilegrad's backward kernels, beside the same model in pure torch.

The model: tokens -> embedding (mean over the sequence) and an 8x8 image -> 2x2 max pooling,
concatenated -> linear -> batch norm -> relu -> dropout -> linear -> log-softmax -> NLL loss.
In the tilegrad model, every layer but the linear ones gets its gradient from a tilegrad op through
`tilegrad.torch.function` (embedding_dense_backward, pooling_backward, batch_norm_backward,
activation_backward, dropout_backward, softmax_backward, nll_loss_backward; batch norm's forward
is tilegrad's batch_norm_forward_training, running statistics updated in place). Both models start
from the same weights and see the same batches and dropout masks; the script prints both loss
curves and fails if they part by more than the tolerance.

    python examples/08_train_with_torch.py [--steps 200]
    torchrun --nproc-per-node 2 examples/08_train_with_torch.py --steps 20     # data-parallel (gloo)

Under torchrun each process trains on its half of every batch and DistributedDataParallel averages
the gradients, as for any torch model: tilegrad has no distribution code of its own.
"""

import argparse
import gc
import os

import torch
import torch.nn.functional as F

import tilegrad.torch as tt

VOCAB, EMBED, TOKENS, IMAGE, HIDDEN, CLASSES, DROPOUT = 50, 16, 4, 8, 64, 10, 0.2


# ---- layers whose gradients are tilegrad kernels -------------------------------------------------
embedding = tt.function(
    lambda weight, indices: F.embedding(indices, weight), "embedding_dense_backward",
    args=lambda weight, indices, out, dout: dict(grad=dout, indices=indices, num_weights=weight.shape[0]),
    grads=("out", None))

max_pool_2x2 = tt.function(
    lambda x: F.max_pool2d(x, 2), "pooling_backward",
    args=lambda x, y, dy: dict(y=y, dy=dy, x=x, mode="max", window=(2, 2), stride=(2, 2)),
    grads="dx")

batch_norm = tt.function(  # x [N, C, 1, 1]; scale, bias, running statistics [1, C, 1, 1]
    "batch_norm_forward_training", "batch_norm_backward",
    args=lambda x, scale, bias, mean, var, y, saved_mean, saved_inv_var, dy, **attrs: dict(
        x=x, dy=dy, bn_scale=scale, saved_mean=saved_mean, saved_inv_variance=saved_inv_var),
    grads=("dx", "d_bn_scale", "d_bn_bias", None, None), returns=1)

relu = tt.function(  # mcDNN's activation takes [N, C, H, W]
    torch.relu, "activation_backward",
    args=lambda x, y, dy: dict(x=x, dy=dy, mode="relu"), grads="dx")


def _dropout(x, p):
    noise = torch.empty_like(x).bernoulli_(1 - p)  # the draw F.dropout makes, so masks agree
    return x * noise.div(1 - p), noise.to(torch.uint8)


dropout = tt.function(
    _dropout, "dropout_backward",
    args=lambda x, p, y, mask, dy: dict(dy=dy, reserve_space=mask, dropout=p), grads=("dx", None), returns=1)

log_softmax = tt.function(  # x [N, C, 1, 1], over C
    lambda x: torch.log_softmax(x, 1), "softmax_backward",
    args=lambda x, y, dy: dict(y=y, dy=dy, algorithm="log", mode="channel"), grads="dx")

nll_loss = tt.function(
    lambda x, target: torch.ops.aten.nll_loss_forward(x, target, None, 1, -100), "nll_loss_backward",
    args=lambda x, target, loss, total_weight, g: dict(grad_output=g, self=x, target=target,
                                                       total_weight=total_weight),
    grads=("out", None), returns=1)


class Model(torch.nn.Module):
    def __init__(self, tilegrad_backward: bool):
        super().__init__()
        self.tilegrad = tilegrad_backward
        self.embed = torch.nn.Embedding(VOCAB, EMBED)
        self.hidden = torch.nn.Linear(EMBED + (IMAGE // 2) ** 2, HIDDEN)
        self.norm = torch.nn.BatchNorm1d(HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, tokens, images, labels):
        if not self.tilegrad:
            words = self.embed(tokens).mean(1)
            pooled = F.max_pool2d(images, 2).flatten(1)
            h = F.dropout(torch.relu(self.norm(self.hidden(torch.cat([words, pooled], 1)))), DROPOUT, self.training)
            return F.nll_loss(torch.log_softmax(self.out(h), 1), labels)
        words = embedding(self.embed.weight, tokens).mean(1)
        pooled = max_pool_2x2(images).flatten(1)
        h = self.hidden(torch.cat([words, pooled], 1))
        channels = (1, HIDDEN, 1, 1)
        h = batch_norm(h.view(-1, HIDDEN, 1, 1), self.norm.weight.view(channels), self.norm.bias.view(channels),
                       self.norm.running_mean.view(channels), self.norm.running_var.view(channels),
                       exponential_average_factor=self.norm.momentum, epsilon=self.norm.eps)
        h = dropout(relu(h).view(-1, HIDDEN), DROPOUT)
        logits = self.out(h).view(-1, CLASSES, 1, 1)
        return nll_loss(log_softmax(logits).view(-1, CLASSES), labels)


def dataset(size: int, generator: torch.Generator):
    """Labels that depend on both branches, so the loss can fall."""
    tokens = torch.randint(0, VOCAB, (size, TOKENS), generator=generator)
    images = torch.randn(size, 1, IMAGE, IMAGE, generator=generator)
    labels = (tokens[:, 0] % 5 + (images[:, 0, :4].mean((1, 2)) > 0).long() * 5) % CLASSES
    return tokens, images, labels


def train(steps: int, batch: int = 64, rank: int = 0, world: int = 1, distributed: bool = False):
    torch.manual_seed(0)
    torch_model = Model(tilegrad_backward=False)
    tilegrad_model = Model(tilegrad_backward=True)
    tilegrad_model.load_state_dict(torch_model.state_dict())
    models = [torch_model, tilegrad_model]
    if distributed:
        models = [torch.nn.parallel.DistributedDataParallel(m) for m in models]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]
    tokens, images, labels = dataset(steps * batch, torch.Generator().manual_seed(1))
    curves = [[], []]
    share = batch // world
    for step in range(steps):
        rows = slice(step * batch + rank * share, step * batch + (rank + 1) * share)
        for index, (model, optimizer) in enumerate(zip(models, optimizers)):
            torch.manual_seed(1000 * step + rank)  # the same dropout draw for both models
            optimizer.zero_grad()
            loss = model(tokens[rows], images[rows], labels[rows])
            loss.backward()
            optimizer.step()
            curves[index].append(loss.item())
    return curves


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tolerance", type=float, default=1e-3, help="largest loss difference allowed")
    options = parser.parse_args()
    distributed = "WORLD_SIZE" in os.environ
    rank, world = 0, 1
    if distributed:
        torch.distributed.init_process_group("gloo")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    torch.set_num_threads(1 if distributed else torch.get_num_threads())
    torch_losses, tilegrad_losses = train(options.steps, rank=rank, world=world, distributed=distributed)
    worst = max(abs(a - b) for a, b in zip(torch_losses, tilegrad_losses))
    every = max(1, options.steps // 10)
    if rank == 0:
        print(f"{'step':>5} {'torch loss':>11} {'tilegrad loss':>14}   (processes: {world})")
        for step in sorted(set(range(0, options.steps, every)) | {options.steps - 1}):
            print(f"{step:5d} {torch_losses[step]:11.6f} {tilegrad_losses[step]:14.6f}")
        print(f"largest difference: {worst:.2e} (tolerance {options.tolerance:g})")
    if distributed:
        # DistributedDataParallel's reducer sits in reference cycles; freed at interpreter exit, its gloo work
        # would take the GIL of a dying interpreter (SIGABRT). Free it now, and leave together.
        gc.collect()
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    if worst > options.tolerance:
        raise SystemExit(f"rank {rank}: the loss curves part by {worst:.2e} > {options.tolerance:g}")


if __name__ == "__main__":
    main()
