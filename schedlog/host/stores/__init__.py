"""The host's task stores: the contract and capabilities (:mod:`~schedlog.host.stores.base`), one
module per backend, and :mod:`~schedlog.host.stores.open`, which chooses and opens one."""
