"""AWC (DSD §4.4): the WC-DNN's training set and its training. :mod:`.grid` the scenario
grid, :mod:`.data` a scenario's runs, decision contexts and labels, :mod:`.tables` their
Parquet files, :mod:`.folder` the ``awc-data`` folder's settings (``run.json``), labels
and summary, :mod:`.inputs` what ``train awc`` reads and checks, :mod:`.train` the
WC-DNN's training and export; :mod:`.command` holds ``edgespec train awc-data`` and
``edgespec train awc``."""
