"""live_summary.py: what every live run's summary (tessera sim --executor gpu --json) must show, for
tests/live_gpu_test.sh and tests/live_tp_gpu_test.sh: every step executed and measured, every
request finished, the measured time positive and within a factor of 3 of the model's."""


def fails(s, requests):
    """The summary s's failures (a list of messages), its measured and its modelled seconds."""
    out = []
    if s.get("live_steps") != s["num_steps"] or s["num_steps"] == 0:
        out.append(f"live_steps {s.get('live_steps')} != num_steps {s['num_steps']}")
    if s["num_finished"] != requests:
        out.append(f"{s['num_finished']} of {requests} requests finished")
    meas, model = s.get("live_measured_s", 0), s.get("live_model_s", 0)
    if not (meas > 0 and 1 / 3 < model / meas < 3):
        out.append(f"measured {meas} s vs model {model} s")
    return out, meas, model
