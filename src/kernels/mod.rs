//! normoracle's own LayerNorm/RMSNorm kernels.
