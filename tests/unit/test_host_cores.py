"""`fit_host_cores` on start-up times worked by hand from its model: k start-ups at once
on c cores each take `fixed + cpu * max(1, k / c)`, `fixed = alone - cpu`; the fit is the
c on a 0.01 grid from 1 with the least squared error."""

from calibration.measure.host_cores import fit_host_cores


def test_times_made_by_the_model_give_back_its_cores():
    # fixed = 2.0 - 1.5 = 0.5. On c = 2: two at once 0.5 + 1.5 * max(1, 2/2) = 2.0 s;
    # four 0.5 + 1.5 * 4/2 = 3.5 s.
    assert fit_host_cores(2.0, 1.5, {2: 2.0, 4: 3.5}, 8) == 2.0
    # On c = 2.5: two at once 0.5 + 1.5 = 2.0 s (2/2.5 < 1); four 0.5 + 1.5 * 1.6 = 2.9 s.
    assert fit_host_cores(2.0, 1.5, {2: 2.0, 4: 2.9}, 8) == 2.5
    # fixed = 0, cpu = 2: two at once 2 * 2/c = 2.5 s gives c = 1.6; four 2 * 4/1.6 = 5.0 s.
    assert fit_host_cores(2.0, 2.0, {2: 2.5, 4: 5.0}, 2) == 1.6
    # One core: two at once 0.5 + 1.5 * 2 = 3.5 s, four 0.5 + 1.5 * 4 = 6.5 s.
    assert fit_host_cores(2.0, 1.5, {2: 3.5, 4: 6.5}, 8) == 1.0


def test_times_off_the_model_give_the_least_squares_cores():
    # fixed = 0, cpu = 1, u = 1/c. For c >= 2 the error is (4 - 4/c)^2 >= 1; below 2 it
    # is (1 - 2u)^2 + (4 - 4u)^2, least where -4(1 - 2u) - 8(4 - 4u) = 0: u = 36/40 =
    # 0.9, c = 1.111; the error grows as 20 (u - 0.9)^2, so of the grid's 1.11
    # (u = 0.9009) and 1.12 (u = 0.8929), 1.11.
    assert fit_host_cores(1.0, 1.0, {2: 1.0, 4: 4.0}, 8) == 1.11


def test_no_stretch_bounds_the_cores_from_below_only():
    # Start-ups at once take as long as one alone: every c >= 4 fits, and the fit takes
    # the OS's count, or the largest level measured when the OS reports fewer.
    assert fit_host_cores(2.0, 1.5, {2: 2.0, 4: 2.0}, 8) == 8.0
    assert fit_host_cores(2.0, 1.5, {2: 2.0, 4: 2.0}, 2) == 4.0
