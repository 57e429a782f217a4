"""ftc.Manager's argument and environment errors (its fault tolerance is
tested under `ftc run` by python_ft_train_test)."""
import os
import unittest

import numpy as np

import ftc


class ManagerErrors(unittest.TestCase):
    def test_missing_options_name_what_is_missing(self):
        for k in [k for k in os.environ if k.startswith("FTC_")]:
            del os.environ[k]
        with self.assertRaises(ftc.Error) as cm:
            ftc.Manager()
        self.assertEqual(cm.exception.name, "FTC_EINVAL")
        self.assertIn("lighthouse", str(cm.exception))

    def test_environment_is_read_under_ftc_run(self):
        os.environ["FTC_LIGHTHOUSE"] = "127.0.0.1:1"
        try:
            with self.assertRaises(ftc.Error) as cm:
                ftc.Manager()  # the rest of the launcher's variables
            self.assertEqual(cm.exception.name, "FTC_EINVAL")
            self.assertIn("FTC_", str(cm.exception))
        finally:
            del os.environ["FTC_LIGHTHOUSE"]

    def test_bad_keywords(self):
        with self.assertRaises(TypeError):
            ftc.Manager(no_such_option=1)
        with self.assertRaises(ValueError):
            ftc.Manager(timeout=-1)

    def test_store_unreachable(self):
        with self.assertRaises(ftc.Error):
            ftc.Manager(lighthouse="127.0.0.1:1", replica_id="r",
                        group_rank=0, group_size=1,
                        store_addr="127.0.0.1:1", connect_timeout=0.3)

    def test_register_checks_the_buffer(self):
        # the checks run in Python, before the manager is reached
        from ftc.manager import Manager
        m = Manager.__new__(Manager)
        m._state = []
        with self.assertRaises(TypeError):
            Manager.register(m, "w", [1.0, 2.0])
        with self.assertRaises(ValueError):
            Manager.register(m, "w", np.zeros(4, np.float32)[::2])


if __name__ == "__main__":
    unittest.main(verbosity=2)
