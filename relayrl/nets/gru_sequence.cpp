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
#include <cmath>
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

// What the forward pass saved for step t, as pointers into the step: the state it started
// from, its candidate n, its gates r and z, and its hidden projection h U + c.
struct SavedStep {
  const float* before;
  const float* n;
  const float* rz;
  const float* hp;
  SavedStep(const at::Tensor& befores, const at::Tensor& news, const at::Tensor& gates, const at::Tensor& hidden_proj,
            int64_t t, int64_t rows, int64_t hidden)
      : before(befores.data_ptr<float>() + t * rows * hidden),
        n(news.data_ptr<float>() + t * rows * hidden),
        rz(gates.data_ptr<float>() + t * rows * 2 * hidden),
        hp(hidden_proj.data_ptr<float>() + t * rows * 3 * hidden) {}
};

// Forward: the hidden states [T, P, B, H] and what the backward pass needs: the gates r, z
// after their sigmoid [T, P, B, 2H], the hidden projection h U + c [T, P, B, 3H], the
// candidate n [T, P, B, H] and the state each step starts from [T, P, B, H].
// With ``fused_order`` (one parameter set, no keep), the hidden projection is addmm's and
// each sigmoid runs on its gate's [B, H] slice, as torch's own GRU cell computes them: ATen
// takes a slice's row tail through its scalar path and a contiguous block's through its
// vector path, which round apart where H is not a multiple of 16.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> forward_impl(
    const at::Tensor& projected, const at::Tensor& h0, const at::Tensor& weight,
    const at::Tensor& bias, const std::optional<at::Tensor>& keep, bool fused_order) {
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
  if (!fused_order) hidden_proj.copy_(bias.unsqueeze(0).expand_as(projected));  // addmm copies it itself
  StepView before_t(befores), hp_t(hidden_proj), rz_t(gates), n_t(news);
  TORCH_CHECK(!fused_order || (weight.size(0) == 1 && !keep.has_value()), "relayrl gru_sequence: the fused order takes one parameter set and no keep");
  const auto bias_row = bias.reshape({-1});
  const auto weight_one = weight[0];
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
    if (fused_order) {
      at::Tensor out = hp_t.at(t)[0];
      at::addmm_out(out, bias_row, before_t.at(t)[0], weight_one);
    } else
      at::baddbmm_out(hp_t.at(t), hp_t.at(t), before_t.at(t), weight);
    const float* __restrict__ x = projected.data_ptr<float>() + t * rows * 3 * hidden;
    const float* __restrict__ hp = hidden_proj.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ rz = gates.data_ptr<float>() + t * rows * 2 * hidden;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 2 * hidden; ++j) rz[i * 2 * hidden + j] = hp[i * 3 * hidden + j] + x[i * 3 * hidden + j];
    if (fused_order) {
      auto step = rz_t.at(t);
      step.narrow(-1, 0, hidden).sigmoid_();
      step.narrow(-1, hidden, hidden).sigmoid_();
    } else {
      rz_t.at(t).sigmoid_();
    }
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

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> forward(
    const at::Tensor& projected, const at::Tensor& h0, const at::Tensor& weight,
    const at::Tensor& bias, const std::optional<at::Tensor>& keep) {
  return forward_impl(projected, h0, weight, bias, keep, false);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> forward_fused_order(
    const at::Tensor& projected, const at::Tensor& h0, const at::Tensor& weight, const at::Tensor& bias) {
  return forward_impl(projected, h0, weight, bias, std::nullopt, true);
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
    const SavedStep saved(befores, news, gates, hidden_proj, t, rows, hidden);
    const float *__restrict__ before = saved.before, *__restrict__ n = saved.n, *__restrict__ rz = saved.rz, *__restrict__ hp = saved.hp;
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

// Backward through time of one parameter set in the order torch's own GRU (torch.gru on the
// CPU) has its autograd graph compute and sum, so that its gradients come out to the last
// bit: per step, the cell's operations' backward formulas (ATen's sigmoid_backward
// a * (1 - b) * b and tanh_backward a * fma(-b, b, 1), as its kernel rounds); the gradient of a hidden state summed
// as its three uses deliver it (the output first, then the blend's h - n, then the hidden
// projection's product); the weight's and the bias's gradients one product and one row sum
// per step, added up from the last step to the first. Same layouts as forward with P = 1;
// returns the gradients of the input projection [T, 1, B, 3H], the weight [H, 3H], the bias
// [3H] and h0 [1, B, H].
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> backward_fused_order(
    const at::Tensor& d_states, const at::Tensor& befores, const at::Tensor& gates,
    const at::Tensor& hidden_proj, const at::Tensor& news, const at::Tensor& weight) {
  for (const auto& [t, name] : {std::pair{&d_states, "d_states"}, {&befores, "befores"}, {&gates, "gates"},
                                {&hidden_proj, "hidden_proj"}, {&news, "news"}})
    check_float_cpu(*t, name);
  TORCH_CHECK(weight.size(0) == 1, "relayrl gru_sequence: backward_fused_order takes one parameter set");
  const int64_t steps = d_states.size(0);
  const int64_t hidden = d_states.size(-1);
  const int64_t rows = d_states[0].numel() / hidden;
  const int64_t step_size = rows * hidden;
  auto d_projected = at::empty_like(hidden_proj);
  auto d_hgates = at::empty({rows, 3 * hidden}, hidden_proj.options());
  auto blend = at::empty({rows, hidden}, hidden_proj.options());  // d h from h - n: the output's gradient times z
  auto weight_t = weight[0].t();
  at::Tensor d_weight, d_bias;
  // d h_t as its uses summed it, in two buffers: the step's (read) and the one before (written)
  at::Tensor gh = d_states[steps - 1].reshape({rows, hidden}).clone(), earlier = at::empty_like(gh);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const float* __restrict__ g = gh.data_ptr<float>();
    const SavedStep saved(befores, news, gates, hidden_proj, t, rows, hidden);
    const float *__restrict__ before = saved.before, *__restrict__ n = saved.n, *__restrict__ rz = saved.rz, *__restrict__ hp = saved.hp;
    float* __restrict__ dp = d_projected.data_ptr<float>() + t * rows * 3 * hidden;
    float* __restrict__ dhp = d_hgates.data_ptr<float>();
    float* __restrict__ b = blend.data_ptr<float>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t k = i * hidden + j, r3 = i * 3 * hidden + j, r2 = i * 2 * hidden + j;
        const float r = rz[r2], z = rz[r2 + hidden];
        const float through_z = g[k] * z;  // (h - n) * z: to h - n
        const float d_z = g[k] * (before[k] - n[k]);  // and to z
        const float d_n = g[k] + (-through_z);  // n's two uses: the sum, then h - n
        const float d_new = d_n * std::fma(-n[k], n[k], 1.0f);  // tanh_backward (ATen's kernel fuses 1 - b * b)
        const float d_hn = d_new * r;  // (h U_n + c_n) * r
        const float d_r = d_new * hp[r3 + 2 * hidden];
        const float d_pre_z = d_z * (1.0f - z) * z;  // sigmoid_backward
        const float d_pre_r = d_r * (1.0f - r) * r;
        dhp[r3] = d_pre_r;
        dhp[r3 + hidden] = d_pre_z;
        dhp[r3 + 2 * hidden] = d_hn;
        dp[r3] = d_pre_r;
        dp[r3 + hidden] = d_pre_z;
        dp[r3 + 2 * hidden] = d_new;
        b[k] = through_z;
      }
    const auto h_before = befores[t].reshape({rows, hidden});
    auto step_weight = at::mm(h_before.t(), d_hgates);  // addmm's backward for its second matrix
    auto step_bias = at::sum(d_hgates, {0});
    d_weight = t == steps - 1 ? step_weight : d_weight.add_(step_weight);
    d_bias = t == steps - 1 ? step_bias : d_bias.add_(step_bias);
    auto product = at::mm(d_hgates, weight_t);  // and for its first
    float* __restrict__ out = earlier.data_ptr<float>();
    const float* __restrict__ m = product.data_ptr<float>();
    if (t > 0) {  // the output's gradient arrives first, then the blend's, then the product's
      const float* __restrict__ d = d_states.data_ptr<float>() + (t - 1) * step_size;
      for (int64_t k = 0; k < step_size; ++k) out[k] = (d[k] + b[k]) + m[k];
    } else {
      for (int64_t k = 0; k < step_size; ++k) out[k] = b[k] + m[k];
    }
    std::swap(gh, earlier);
  }
  return {d_projected, d_weight, d_bias, gh.reshape({1, rows, hidden})};
}

}  // namespace

TORCH_LIBRARY(relayrl_gru, m) {
  m.def("forward", &forward);
  m.def("backward", &backward);
  m.def("forward_fused_order", &forward_fused_order);
  m.def("backward_fused_order", &backward_fused_order);
}
