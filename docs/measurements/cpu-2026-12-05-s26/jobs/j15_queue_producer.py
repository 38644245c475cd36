"""No DataLoader: a producer process builds batches (Python parsing, ~2x the model step) into a
multiprocessing.Queue; the loop takes each with queue.get(), then a small MLP step."""
import time, torch, sys, multiprocessing as mp, random, json
from common import Truth

def produce(queue, stop):
    random.seed(0)
    rows = [json.dumps({"f": [random.random() for _ in range(256)], "y": random.randrange(10)}) for _ in range(500)]
    while not stop.is_set():
        xs, ys = [], []
        for _ in range(64):
            r = json.loads(random.choice(rows)); xs.append(r["f"]); ys.append(r["y"])
        queue.put((torch.tensor(xs), torch.tensor(ys)))

if __name__ == "__main__":
    queue, stop = mp.Queue(maxsize=4), mp.Event()
    producer = mp.Process(target=produce, args=(queue, stop), daemon=True)
    producer.start()
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    truth = Truth(); deadline = time.time() + float(sys.argv[1])
    truth.t = time.perf_counter()
    while time.time() < deadline:
        x, y = queue.get()
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
    stop.set()
    truth.report()
    producer.terminate()
