"""`fit_host_cores` on start-up times worked by hand from its model: a start-up beside
flows that leave it `rate` of c cores (each flow its cap times c over the caps asked,
where they ask more than c; a start-up asks one core) takes
`fixed + cpu / min(1, rate)`, `fixed = alone - cpu`; the fit is the c on a 0.01 grid
from 1 with the least squared error."""

from calibration.measure.host_cores import Stretch, at_once, fit_host_cores


def together(**walls: float) -> list[Stretch]:
    """Start-ups begun together, `x2=2.0` meaning two at once took 2.0 s each."""
    return [at_once(int(name.removeprefix("x")), wall) for name, wall in walls.items()]


def test_times_made_by_the_model_give_back_its_cores():
    # fixed = 2.0 - 1.5 = 0.5. On c = 2: two at once 0.5 + 1.5 * max(1, 2/2) = 2.0 s;
    # four 0.5 + 1.5 * 4/2 = 3.5 s.
    assert fit_host_cores(2.0, 1.5, together(x2=2.0, x4=3.5), 8) == 2.0
    # On c = 2.5: two at once 0.5 + 1.5 = 2.0 s (2/2.5 < 1); four 0.5 + 1.5 * 1.6 = 2.9 s.
    assert fit_host_cores(2.0, 1.5, together(x2=2.0, x4=2.9), 8) == 2.5
    # fixed = 0, cpu = 2: two at once 2 * 2/c = 2.5 s gives c = 1.6; four 2 * 4/1.6 = 5.0 s.
    assert fit_host_cores(2.0, 2.0, together(x2=2.5, x4=5.0), 2) == 1.6
    # One core: two at once 0.5 + 1.5 * 2 = 3.5 s, four 0.5 + 1.5 * 4 = 6.5 s.
    assert fit_host_cores(2.0, 1.5, together(x2=3.5, x4=6.5), 8) == 1.0


def test_times_off_the_model_give_the_least_squares_cores():
    # fixed = 0, cpu = 1, u = 1/c. For c >= 2 the error is (4 - 4/c)^2 >= 1; below 2 it
    # is (1 - 2u)^2 + (4 - 4u)^2, least where -4(1 - 2u) - 8(4 - 4u) = 0: u = 36/40 =
    # 0.9, c = 1.111; the error grows as 20 (u - 0.9)^2, so of the grid's 1.11
    # (u = 0.9009) and 1.12 (u = 0.8929), 1.11.
    assert fit_host_cores(1.0, 1.0, together(x2=1.0, x4=4.0), 8) == 1.11


def test_no_stretch_bounds_the_cores_from_below_only():
    # Start-ups at once take as long as one alone: every c >= 4 fits, and the fit takes
    # the OS's count, or the largest level measured when the OS reports fewer.
    assert fit_host_cores(2.0, 1.5, together(x2=2.0, x4=2.0), 8) == 8.0
    assert fit_host_cores(2.0, 1.5, together(x2=2.0, x4=2.0), 2) == 4.0


def test_a_start_up_beside_a_load_shares_the_cores_in_proportion_to_the_caps():
    # fixed = 0, cpu = 1. Beside a load capped at 0.9 cores, 1.9 cores are asked: on
    # c = 1.7 each flow gets 1.7/1.9 of its cap, the start-up 0.895 cores: 1.118 s. On
    # c = 1.5: 1.267 s.
    assert fit_host_cores(1.0, 1.0, [Stretch(1.9 / 1.7, (0.9,))], 8) == 1.7
    assert fit_host_cores(1.0, 1.0, [Stretch(1.9 / 1.5, (0.9,))], 8) == 1.5
    # A load capped at 0.4 on c = 1.2: 1.4/1.2 = 1.167 s; from c = 1.4 up the start-up has
    # its whole core (1.0 s).
    assert fit_host_cores(1.0, 1.0, [Stretch(1.4 / 1.2, (0.4,))], 8) == 1.2


def test_a_flow_asking_one_core_slows_a_start_up_as_another_start_up_does():
    # On c = 1.6 beside one flow capped at one core (a load's or a start-up's alike), a
    # start-up gets 0.8: 1.25 s.
    assert fit_host_cores(1.0, 1.0, [Stretch(1.25, (1.0,))], 8) == 1.6


def test_the_load_point_moves_a_fit_that_start_ups_alone_would_leave_high():
    # Two start-ups at once hardly stretch (c = 1.9 alone would fit them: 2/1.9 = 1.053),
    # but beside a load capped at 0.8 cores one took 1.25 s: on c = 1.9 it would get its
    # core (0.8 + 1 <= 1.9) and take 1.0 s, on c = 1.44 1.8/1.44 = 1.25 s. The least
    # squares of both lie between (1.74).
    alone = fit_host_cores(1.0, 1.0, together(x2=2 / 1.9), 8)
    both = fit_host_cores(1.0, 1.0, [*together(x2=2 / 1.9), Stretch(1.25, (0.8,))], 8)
    assert alone == 1.9 and 1.6 < both < 1.9


def test_a_slowdown_in_company_explains_stretches_below_saturation():
    # fixed = 0, cpu = 1, each start-up in company asking 1/1.1 of a core. On c = 2, two at
    # once ask 1.82 cores and get them: 1.1 s; four ask 3.64 and get half a core each:
    # 2.0 s, as without the slowdown. Without it, 1.1 s for two says c = 1.82 and 2.0 s
    # for four c = 2: the fit lies between.
    assert fit_host_cores(1.0, 1.0, together(x2=1.1, x4=2.0), 8, 0.1) == 2.0
    assert 1.82 < fit_host_cores(1.0, 1.0, together(x2=1.1, x4=2.0), 8) < 2.0
    # Beside a flow of 0.3 cores nothing saturates from 1.21 cores up: the slowdown is all
    # of the stretch, and the cores are bounded from below only.
    assert fit_host_cores(1.0, 1.0, [Stretch(1.1, (0.3,))], 8, 0.1) == 8.0
