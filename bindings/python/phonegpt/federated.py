"""An adapter client with the method shapes of Flower's NumPyClient (docs/federated.md, Flower):
get_parameters(config) -> list of arrays; fit(parameters, config) -> (parameters, num_examples,
metrics); evaluate(parameters, config) -> (loss, num_examples, metrics). It is not Flower and
does not import it (Flower is not installable here); a Flower deployment subclasses
flwr.client.NumPyClient and delegates to it.

    client = AdapterClient(base, adapter, train_tokens, val_tokens, steps=200, batch_size=16)
    params = client.get_parameters({})
    params, n, metrics = client.fit(params, {"round": 1})
    loss, n, _ = client.evaluate(params, {})
"""
from ._phonegpt import Adapter, Model  # noqa: F401  (types of the arguments)


class AdapterClient:
    """A phone's side of a round over one adapter of `base`: the adapter's tensors travel as the
    flat list of float32 arrays of Adapter.get_weights() (order: Adapter.tensor_names())."""

    def __init__(self, base, adapter, train_tokens, val_tokens, steps, **train_fields):
        self.base, self.adapter = base, adapter
        self.train_tokens, self.val_tokens = train_tokens, val_tokens
        self.steps, self.train_fields = steps, train_fields

    def get_parameters(self, config):
        return self.adapter.get_weights()

    def fit(self, parameters, config):
        """Sets the adapter to `parameters`, trains config.get('steps', steps) steps (seed: the
        round, so each round draws other batches) and returns (new parameters, tokens trained,
        {"loss": last step's loss})."""
        self.adapter.set_weights(parameters)
        fields = dict(self.train_fields)
        fields.setdefault("seed", int(config.get("round", 0)))
        results = self.adapter.fit(self.base, self.train_tokens, int(config.get("steps", self.steps)), **fields)
        return self.adapter.get_weights(), sum(r.tokens for r in results), {"loss": float(results[-1].loss)}

    def evaluate(self, parameters, config):
        """(whole-split loss of base + parameters on the validation tokens, predictions scored, {})."""
        self.adapter.set_weights(parameters)
        r = self.adapter.evaluate(self.base, self.val_tokens)
        return float(r.mean_loss), int(r.n_scored), {}
