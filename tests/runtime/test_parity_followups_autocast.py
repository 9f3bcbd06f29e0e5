"""Output dtypes of ops under ``autocast("cpu", dtype=bfloat16 / float16)`` against torch's
for the same calls (its CPU lists: lower-precision, fp32, promote, and ops outside them that
run in their inputs' dtype, such as linalg.solve and lstsq)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def T(m, *shape, seed=0, pos=False, spd=False):  # noqa: N802 - a table's short name
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if pos:
        a = np.abs(a) + 0.5
    if spd:
        a = a @ a.T + np.eye(shape[0], dtype=np.float32) * 3
    return m.tensor(a)


def F_(m):  # noqa: N802
    return m.nn.functional


# torch's differ here for reasons outside autocast's lists (left for their owners): LSTM
# modules (torch's lstm kernel is listed), pinv (torch's is built from a lowered matmul),
# embedding_bag (torch's fp32 list)
KNOWN = {"lstm", "pinv", "embedding_bag"}

CASES = {
 'mm': lambda m: m.mm(T(m,3,4),T(m,4,2)), 'matmul': lambda m: m.matmul(T(m,3,4),T(m,4,2)), 'bmm': lambda m: m.bmm(T(m,2,3,4),T(m,2,4,2)),
 'addmm': lambda m: m.addmm(T(m,3,2),T(m,3,4),T(m,4,2)), 'addbmm': lambda m: m.addbmm(T(m,3,2),T(m,2,3,4),T(m,2,4,2)), 'baddbmm': lambda m: m.baddbmm(T(m,2,3,2),T(m,2,3,4),T(m,2,4,2)),
 'linear': lambda m: F_(m).linear(T(m,3,4),T(m,2,4)), 'conv1d': lambda m: F_(m).conv1d(T(m,1,2,5),T(m,3,2,2)), 'conv2d': lambda m: F_(m).conv2d(T(m,1,2,5,5),T(m,3,2,2,2)),
 'conv_transpose2d': lambda m: F_(m).conv_transpose2d(T(m,1,2,5,5),T(m,2,3,2,2)), 'conv3d': lambda m: F_(m).conv3d(T(m,1,2,4,4,4),T(m,3,2,2,2,2)),
 'conv_tbc': lambda m: m.conv_tbc(T(m,5,1,2),T(m,2,2,3),T(m,3)), 'prelu': lambda m: F_(m).prelu(T(m,2,3),T(m,1)),
 'addmv': lambda m: m.addmv(T(m,3),T(m,3,4),T(m,4)), 'addr': lambda m: m.addr(T(m,3,4),T(m,3),T(m,4)), 'mv': lambda m: m.mv(T(m,3,4),T(m,4)), 'dot': lambda m: m.dot(T(m,4),T(m,4)),
 'vdot': lambda m: m.vdot(T(m,4),T(m,4)), 'chain_matmul': lambda m: m.linalg.multi_dot([T(m,3,4),T(m,4,2)]), 'einsum': lambda m: m.einsum('ij,jk->ik',T(m,3,4),T(m,4,2)),
 'tensordot': lambda m: m.tensordot(T(m,3,4),T(m,4,2),1), 'inner': lambda m: m.inner(T(m,3,4),T(m,2,4)), 'outer': lambda m: m.outer(T(m,3),T(m,4)), 'kron': lambda m: m.kron(T(m,2,2),T(m,2,2)),
 'sdpa': lambda m: F_(m).scaled_dot_product_attention(T(m,1,2,3,4),T(m,1,2,3,4),T(m,1,2,3,4)),
 'layer_norm': lambda m: F_(m).layer_norm(T(m,3,4),(4,)), 'group_norm': lambda m: F_(m).group_norm(T(m,2,4,3),2), 'batch_norm': lambda m: F_(m).batch_norm(T(m,3,4),None,None,training=True),
 'instance_norm': lambda m: F_(m).instance_norm(T(m,2,3,4)), 'rms_norm': lambda m: F_(m).rms_norm(T(m,3,4),(4,)), 'local_response_norm': lambda m: F_(m).local_response_norm(T(m,1,4,3),2),
 'normalize': lambda m: F_(m).normalize(T(m,3,4)), 'norm': lambda m: m.norm(T(m,3,4)), 'frobenius_norm': lambda m: m.linalg.matrix_norm(T(m,3,4)), 'vector_norm': lambda m: m.linalg.vector_norm(T(m,3,4)),
 'nuclear_norm': lambda m: m.linalg.matrix_norm(T(m,3,4),'nuc'), 'cdist': lambda m: m.cdist(T(m,3,4),T(m,2,4)), 'pdist': lambda m: F_(m).pdist(T(m,3,4)), 'dist': lambda m: m.dist(T(m,3,4),T(m,3,4,seed=1)),
 'cosine_similarity': lambda m: F_(m).cosine_similarity(T(m,3,4),T(m,3,4,seed=1)), 'pairwise_distance': lambda m: F_(m).pairwise_distance(T(m,3,4),T(m,3,4,seed=1)),
 'softmax': lambda m: m.softmax(T(m,3,4),1), 'log_softmax': lambda m: m.log_softmax(T(m,3,4),1), 'cumsum': lambda m: m.cumsum(T(m,3,4),1), 'cumprod': lambda m: m.cumprod(T(m,3,4),1),
 'sum': lambda m: m.sum(T(m,3,4)), 'prod': lambda m: m.prod(T(m,3,4)), 'mean': lambda m: m.mean(T(m,3,4)), 'exp': lambda m: m.exp(T(m,3,4)), 'log': lambda m: m.log(T(m,3,4,pos=True)),
 'pow': lambda m: m.pow(T(m,3,4),2), 'sqrt': lambda m: m.sqrt(T(m,3,4,pos=True)), 'rsqrt': lambda m: m.rsqrt(T(m,3,4,pos=True)), 'sinh': lambda m: m.sinh(T(m,3,4)), 'acos': lambda m: m.acos(T(m,3,4)*0.1),
 'erfinv': lambda m: m.erfinv(T(m,3,4)*0.1), 'reciprocal': lambda m: m.reciprocal(T(m,3,4)), 'log1p': lambda m: m.log1p(T(m,3,4,pos=True)), 'log2': lambda m: m.log2(T(m,3,4,pos=True)), 'log10': lambda m: m.log10(T(m,3,4,pos=True)),
 'cross_entropy': lambda m: F_(m).cross_entropy(T(m,3,4),m.tensor([0,1,2])), 'nll_loss': lambda m: F_(m).nll_loss(T(m,3,4),m.tensor([0,1,2])), 'mse_loss': lambda m: F_(m).mse_loss(T(m,3,4),T(m,3,4,seed=1)),
 'l1_loss': lambda m: F_(m).l1_loss(T(m,3,4),T(m,3,4,seed=1)), 'smooth_l1_loss': lambda m: F_(m).smooth_l1_loss(T(m,3,4),T(m,3,4,seed=1)), 'huber_loss': lambda m: F_(m).huber_loss(T(m,3,4),T(m,3,4,seed=1)),
 'bce': lambda m: F_(m).binary_cross_entropy(T(m,3,4).sigmoid(),T(m,3,4,seed=1).sigmoid()), 'bce_logits': lambda m: F_(m).binary_cross_entropy_with_logits(T(m,3,4),T(m,3,4,seed=1).sigmoid()),
 'kl_div': lambda m: F_(m).kl_div(T(m,3,4),T(m,3,4,seed=1).softmax(1)), 'soft_margin': lambda m: F_(m).soft_margin_loss(T(m,3,4),T(m,3,4,seed=1)), 'margin_ranking': lambda m: F_(m).margin_ranking_loss(T(m,3),T(m,3,seed=1),T(m,3,seed=2).sign()),
 'hinge_embedding': lambda m: F_(m).hinge_embedding_loss(T(m,3,4),T(m,3,4).sign()), 'cosine_embedding': lambda m: F_(m).cosine_embedding_loss(T(m,3,4),T(m,3,4,seed=1),m.tensor([1.,-1.,1.])),
 'poisson_nll': lambda m: F_(m).poisson_nll_loss(T(m,3,4),T(m,3,4,pos=True)), 'gaussian_nll': lambda m: F_(m).gaussian_nll_loss(T(m,3,4),T(m,3,4,seed=1),T(m,3,4,pos=True)),
 'multilabel_margin': lambda m: F_(m).multilabel_margin_loss(T(m,3,4),m.tensor([[0,1,-1,0]]*3)), 'multi_margin': lambda m: F_(m).multi_margin_loss(T(m,3,4),m.tensor([0,1,2])),
 'triplet_margin': lambda m: F_(m).triplet_margin_loss(T(m,3,4),T(m,3,4,seed=1),T(m,3,4,seed=2)), 'ctc': None,
 'grid_sample': lambda m: F_(m).grid_sample(T(m,1,1,4,4),T(m,1,2,2,2)*0.5, align_corners=False), 'upsample_nearest': lambda m: F_(m).interpolate(T(m,1,1,3,3),scale_factor=2),
 'upsample_bilinear': lambda m: F_(m).interpolate(T(m,1,1,3,3),scale_factor=2,mode='bilinear'), 'max_pool2d': lambda m: F_(m).max_pool2d(T(m,1,1,4,4),2), 'avg_pool2d': lambda m: F_(m).avg_pool2d(T(m,1,1,4,4),2),
 'adaptive_avg_pool2d': lambda m: F_(m).adaptive_avg_pool2d(T(m,1,1,4,4),2), 'relu': lambda m: m.relu(T(m,3,4)), 'gelu': lambda m: F_(m).gelu(T(m,3,4)), 'silu': lambda m: F_(m).silu(T(m,3,4)),
 'tanh': lambda m: m.tanh(T(m,3,4)), 'sigmoid': lambda m: m.sigmoid(T(m,3,4)), 'embedding': lambda m: F_(m).embedding(m.tensor([0,1]),T(m,3,4)), 'dropout': lambda m: F_(m).dropout(T(m,3,4),0.0),
 'add': lambda m: T(m,3,4)+T(m,3,4), 'cat_mixed': lambda m: m.cat([T(m,2), T(m,2).to(m.bfloat16)]), 'stack_mixed': lambda m: m.stack([T(m,2), T(m,2).to(m.float16)]),
 'addcmul_mixed': lambda m: m.addcmul(T(m,2), T(m,2).to(m.bfloat16), T(m,2)), 'index_put': lambda m: T(m,3).index_put((m.tensor([0]),), T(m,1).to(m.bfloat16)),
 'scatter_add': lambda m: T(m,3).scatter_add(0, m.tensor([0,1]), T(m,2).to(m.float16)), 'atan2': lambda m: m.atan2(T(m,3),T(m,3).to(m.bfloat16)), 'bilinear': lambda m: F_(m).bilinear(T(m,2,3),T(m,2,4),T(m,5,3,4)),
 'lstm_cell': lambda m: m.nn.LSTMCell(3,4)(T(m,2,3))[0], 'gru_cell': lambda m: m.nn.GRUCell(3,4)(T(m,2,3)), 'rnn_tanh_cell': lambda m: m.nn.RNNCell(3,4)(T(m,2,3)),
 'lstm': lambda m: m.nn.LSTM(3,4)(T(m,2,1,3))[0], 'gru': lambda m: m.nn.GRU(3,4)(T(m,2,1,3))[0], 'mha': lambda m: m.nn.MultiheadAttention(4,2)(T(m,2,1,4),T(m,2,1,4),T(m,2,1,4))[0],
 'cholesky': lambda m: m.linalg.cholesky(T(m,3,3,spd=True)), 'inverse': lambda m: m.linalg.inv(T(m,3,3,spd=True)), 'det': lambda m: m.linalg.det(T(m,3,3,spd=True)), 'slogdet': lambda m: m.linalg.slogdet(T(m,3,3,spd=True))[1],
 'svd': lambda m: m.linalg.svd(T(m,3,3))[1], 'qr': lambda m: m.linalg.qr(T(m,3,3))[0], 'eigh': lambda m: m.linalg.eigh(T(m,3,3,spd=True))[0], 'solve': lambda m: m.linalg.solve(T(m,3,3,spd=True),T(m,3,2)),
 'lstsq': lambda m: m.linalg.lstsq(T(m,3,3,spd=True),T(m,3,2))[0], 'pinv': lambda m: m.linalg.pinv(T(m,3,3)), 'matrix_exp': lambda m: m.linalg.matrix_exp(T(m,3,3)), 'cholesky_solve': lambda m: m.cholesky_solve(T(m,3,2), m.linalg.cholesky(T(m,3,3,spd=True))),
 'triangular_solve': lambda m: m.linalg.solve_triangular(T(m,3,3,spd=True).triu(),T(m,3,2),upper=True), 'matrix_power': lambda m: m.linalg.matrix_power(T(m,3,3),2), 'fft': None,
 'polar': None, 'stft': None, 'trace': lambda m: m.trace(T(m,3,3)), 'diag': lambda m: m.diag(T(m,3,3)), 'logsumexp': lambda m: m.logsumexp(T(m,3,4),1), 'var': lambda m: m.var(T(m,3,4)), 'std': lambda m: m.std(T(m,3,4)),
 'renorm': lambda m: m.renorm(T(m,3,4),2,0,1.0), 'dist_p1': lambda m: m.dist(T(m,3,4),T(m,3,4,seed=1),1), 'erf': lambda m: m.erf(T(m,3,4)), 'layer_norm_mod': lambda m: m.nn.LayerNorm(4)(T(m,3,4)),
 'group_norm_mod': lambda m: m.nn.GroupNorm(2,4)(T(m,2,4,3)), 'batch_norm_mod': lambda m: m.nn.BatchNorm1d(4)(T(m,3,4)), 'instance_norm_mod': lambda m: m.nn.InstanceNorm1d(4)(T(m,2,4,3)), 'rms_norm_mod': lambda m: m.nn.RMSNorm(4)(T(m,3,4)),
 'fused_linear_mod': lambda m: m.nn.Linear(4,2)(T(m,3,4)), 'conv_mod': lambda m: m.nn.Conv2d(2,3,2)(T(m,1,2,5,5)), 'embedding_bag': lambda m: F_(m).embedding_bag(m.tensor([0,1,2,1]),T(m,3,4),m.tensor([0,2])),
 'cumulative_trapezoid': lambda m: m.cumulative_trapezoid(T(m,3,4)), 'topk': lambda m: m.topk(T(m,3,4),2)[0], 'sort': lambda m: m.sort(T(m,3,4))[0], 'where_mixed': lambda m: m.where(T(m,3)>0, T(m,3), T(m,3).to(m.bfloat16)),
 'lerp_mixed': None, 'tensor_dot_mixed': lambda m: m.mm(T(m,3,4), T(m,4,2).double()),
}


def _dtype(m, name, dt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with m.autocast("cpu", dtype=getattr(m, dt)):
                return str(CASES[name](m).dtype).split(".")[-1]
        except Exception as e:  # the kind of failure is compared
            return type(e).__name__


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(n for n, f in CASES.items() if f is not None
                                        and n not in KNOWN))
def test_autocast_output_dtype_matches_torch(name, dt):
    assert _dtype(rt, name, dt) == _dtype(torch, name, dt)
