"""A policy-gradient loop with no DataLoader: each step rolls out 16 episodes of a small environment
simulated in Python (the batch is made by the loop itself), then one optimizer step on them."""
import math, random, time, torch, sys
from common import Truth
random.seed(0)
policy = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
def rollout():
    x, v, states, actions, rewards = 0.0, 0.0, [], [], []
    for t in range(50):
        s = [x, v, math.sin(t / 5), math.cos(t / 5)]
        a = random.randint(0, 1)
        v += (0.1 if a else -0.1) - 0.01 * x; x += v
        states.append(s); actions.append(a); rewards.append(-abs(x))
    return states, actions, rewards
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
while time.time() < deadline:
    S, A, R = [], [], []
    for _ in range(16):
        s, a, r = rollout(); S += s; A += a; R += r
    states, actions, returns = torch.tensor(S), torch.tensor(A), torch.tensor(R)
    truth.mark("loop_pre")
    logp = torch.log_softmax(policy(states), -1).gather(1, actions[:, None]).squeeze(1)
    loss = -(logp * (returns - returns.mean())).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model"); truth.next_step()
truth.report()
