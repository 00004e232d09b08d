// The loops over time of relayrl's GRUSequence (relayrl/nets/gru.py) in C++: the same
// tensor operations in the same order, so the same values to the last bit. The matrix
// products and the two activations are ATen's own calls (torch's kernels); the additions
// and multiplications between them run as plain loops over the step's rows, which is
// where the Python loop lost its time (each was a tensor operation on a strided gate
// slice: 9-15 us against well under 1 us here). Built with -ffp-contract=off: a fused
// multiply-add would round once where torch rounds twice.
//
// Layouts (time-major, as GRUSequence passes them): projected [T, P, B, 3H], h0 [P, B, H],
// weight [P, H, 3H], bias [P, 1, 3H], keep [T, P, B, 1] (float 0/1) or none.

#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

namespace {

void check_float_cpu(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(),
              "relayrl gru_sequence: ", name, " must be a contiguous float32 CPU tensor");
}

// One step of a contiguous time-major tensor, moved from step to step by its storage offset:
// a view per step would cost a tensor (and a dispatch) per step and array.
struct StepView {
  at::Tensor view;
  int64_t step_size;
  explicit StepView(const at::Tensor& whole) : view(whole[0]), step_size(whole[0].numel()) {}
  at::Tensor& at(int64_t t) {
    view.unsafeGetTensorImpl()->set_storage_offset(t * step_size);
    return view;
  }
};

// Forward: the hidden states [T, P, B, H] and what the backward pass needs: the gates r, z
// after their sigmoid [T, P, B, 2H], the hidden projection h U + c [T, P, B, 3H], the
// candidate n [T, P, B, H] and the state each step starts from [T, P, B, H].
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> forward(
    const at::Tensor& projected, const at::Tensor& h0, const at::Tensor& weight,
    const at::Tensor& bias, const std::optional<at::Tensor>& keep) {
  check_float_cpu(projected, "projected");
  check_float_cpu(h0, "h0");
  if (keep.has_value()) check_float_cpu(*keep, "keep");
  const int64_t steps = projected.size(0);
  const int64_t hidden = h0.size(-1);
  const int64_t rows = h0.numel() / hidden;  // P * B
  const int64_t step_size = rows * hidden;
  auto states = at::empty({steps, h0.size(0), h0.size(1), hidden}, projected.options());
  auto gates = at::empty({steps, h0.size(0), h0.size(1), 2 * hidden}, projected.options());
  auto news = at::empty_like(states);
  auto befores = at::empty_like(states);  // after the episode-start zeroing
  // every step's h U + c starts as the bias (what baddbmm copies into its output first)
  auto hidden_proj = at::empty_like(projected);
  hidden_proj.copy_(bias.unsqueeze(0).expand_as(projected));
  StepView before_t(befores), hp_t(hidden_proj), rz_t(gates), n_t(news);
  const float* __restrict__ previous = h0.data_ptr<float>();
  for (int64_t t = 0; t < steps; ++t) {
    float* __restrict__ start = befores.data_ptr<float>() + t * step_size;
    if (keep.has_value()) {
      const float* __restrict__ k = keep->data_ptr<float>() + t * rows;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < hidden; ++j) start[i * hidden + j] = previous[i * hidden + j] * k[i];
    } else {
      std::copy(previous, previous + step_size, start);
    }
    at::baddbmm_out(hp_t.at(t), hp_t.at(t), before_t.at(t), weight);
    const float* __restrict__ x = projected.data_ptr<float>() + t * rows * 3 * hidden;
    const float* __restrict__ hp = hidden_proj.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ rz = gates.data_ptr<float>() + t * rows * 2 * hidden;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 2 * hidden; ++j) rz[i * 2 * hidden + j] = hp[i * 3 * hidden + j] + x[i * 3 * hidden + j];
    rz_t.at(t).sigmoid_();
    float* __restrict__ n = news.data_ptr<float>() + t * step_size;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        const float v = hp[i * 3 * hidden + 2 * hidden + j] * rz[i * 2 * hidden + j];
        n[i * hidden + j] = v + x[i * 3 * hidden + 2 * hidden + j];
      }
    n_t.at(t).tanh_();
    float* __restrict__ out = states.data_ptr<float>() + t * step_size;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        float v = start[i * hidden + j] - n[i * hidden + j];
        v = v * rz[i * 2 * hidden + hidden + j];
        out[i * hidden + j] = v + n[i * hidden + j];
      }
    previous = out;
  }
  return {states, gates, hidden_proj, news, befores};
}

// Backward through time: from the gradient of every hidden state [T, P, B, H] -> the
// gradient of the input projection [T, P, B, 3H], of the hidden projection [T, P, B, 3H]
// (for the weight and bias gradients) and of h0. The coefficients that do not depend on
// the incoming gradient are the Python loop's expressions, evaluated element by element:
//   dz = ((before - n) * z) * (1 - z), dn = (1 - z) * (1 - n * n), dr = (hn * r) * (1 - r).
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(
    const at::Tensor& d_states, const at::Tensor& befores, const at::Tensor& gates,
    const at::Tensor& hidden_proj, const at::Tensor& news, const at::Tensor& weight,
    const std::optional<at::Tensor>& keep) {
  for (const auto& [t, name] : {std::pair{&d_states, "d_states"}, {&befores, "befores"}, {&gates, "gates"},
                                {&hidden_proj, "hidden_proj"}, {&news, "news"}})
    check_float_cpu(*t, name);
  if (keep.has_value()) check_float_cpu(*keep, "keep");
  const int64_t steps = d_states.size(0);
  const int64_t hidden = d_states.size(-1);
  const int64_t rows = d_states[0].numel() / hidden;
  const int64_t step_size = rows * hidden;
  auto d_projected = at::empty_like(hidden_proj);
  auto d_hidden_proj = at::empty_like(hidden_proj);
  auto weight_t = weight.transpose(1, 2);
  StepView d_hp_t(d_hidden_proj);
  // dh of the step after (read) and of this step (written: first dh * z, which baddbmm then
  // adds to, as torch.baddbmm(dh * z, ...) does in its output)
  at::Tensor after = d_states[steps - 1].clone(), current = at::empty_like(after);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float* __restrict__ g = after.data_ptr<float>();
    const float* __restrict__ before = befores.data_ptr<float>() + t * step_size;
    const float* __restrict__ n = news.data_ptr<float>() + t * step_size;
    const float* __restrict__ rz = gates.data_ptr<float>() + t * rows * 2 * hidden;
    const float* __restrict__ hp = hidden_proj.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ dp = d_projected.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ dhp = d_hidden_proj.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ s = current.data_ptr<float>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t k = i * hidden + j, r3 = i * 3 * hidden + j, r2 = i * 2 * hidden + j;
        const float r = rz[r2], z = rz[r2 + hidden], one_z = 1.0f - z;
        const float dz_coef = ((before[k] - n[k]) * z) * one_z;
        const float dn_coef = one_z * (1.0f - n[k] * n[k]);
        const float dr_coef = (hp[r3 + 2 * hidden] * r) * (1.0f - r);
        const float dn = g[k] * dn_coef;
        const float dr = dn * dr_coef, dz = g[k] * dz_coef;
        dhp[r3] = dr;
        dhp[r3 + hidden] = dz;
        dhp[r3 + 2 * hidden] = dn * r;
        dp[r3] = dr;
        dp[r3 + hidden] = dz;
        dp[r3 + 2 * hidden] = dn;
        s[k] = g[k] * z;
      }
    at::baddbmm_out(current, current, d_hp_t.at(t), weight_t);
    float* __restrict__ d = current.data_ptr<float>();
    if (keep.has_value()) {
      const float* __restrict__ kp = keep->data_ptr<float>() + t * rows;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < hidden; ++j) d[i * hidden + j] = d[i * hidden + j] * kp[i];
    }
    if (t > 0) {
      const float* __restrict__ incoming = d_states.data_ptr<float>() + (t - 1) * step_size;
      for (int64_t k = 0; k < step_size; ++k) d[k] = d[k] + incoming[k];
    }
    std::swap(after, current);
  }
  return {d_projected, d_hidden_proj, after};
}

}  // namespace

TORCH_LIBRARY(relayrl_gru, m) {
  m.def("forward", &forward);
  m.def("backward", &backward);
}
